// Package procguard keeps the processes a tool starts from outliving
// their command, agent or process: each command runs in a process group
// of its own (and a cgroup where the machine allows), is killed when this
// process dies, and a small reaper helper kills what is left if this
// process is killed outright.
package procguard
