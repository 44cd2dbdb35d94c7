//go:build race

package toolcli

// raceBuild: the race detector makes sync.Pool drop a random share of
// what is put back, so a call's bytes vary from run to run (300-415 KB
// seen where a normal build allocates 225 KB); its allocation count
// does not.
const raceBuild = true
