package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"strings"

	"github.com/troupe-ai/troupe/app/nodecmd"
	"github.com/troupe-ai/troupe/app/runner"
)

// Exit codes shared by the commands.
const (
	exitOK        = 0
	exitFailed    = 1 // a tool returned an error result, or the agent failed
	exitUsage     = 2 // bad flags, arguments or config
	exitLimit     = 3 // round or budget limit reached
	exitSubFailed = 4 // the root finished, but some of its sub-agents failed
	exitInterrupt = 130
)

// errUsage marks errors that are the caller's: exit code 2. It is the
// runner's, so the run's own usage errors map the same way.
var errUsage = runner.ErrUsage

func usageErr(format string, args ...any) error { return runner.Usage(format, args...) }

const topUsage = `orchestrator: run teams of LLM agents as actors

Usage:
  orchestrator demo [--workspace DIR [--in-place]] [--nodes N] [--keep]   an offline swarm against a scripted model
  orchestrator run [--workspace DIR] [--model M] [--config FILE] [--max-rounds N] [--json] [--yes] [flags] "task"
  orchestrator resume [RUN] [--workspace DIR] [--model M] [--json] [flags]
  orchestrator watch [--nats URL] [--creds FILE] [--run ID] [--from-start] [--json] [--follow] [--interactive] [--web ADDR] [flags]
  orchestrator serve [--listen 127.0.0.1:4222] [--store DIR] [--ephemeral] [flags]
  orchestrator mcp [--workspace DIR] [--config FILE] [--model M] [--nats URL] [--creds FILE] [--http ADDR] [flags]   troupe as an MCP server
  orchestrator auth init DIR [--config FILE]       creds files and a nats-server config for an existing server
  orchestrator auth node NAME --dir DIR [--kinds K,...]   a node's own credentials (nodes/NAME.creds)
  orchestrator auth revoke NAME --dir DIR [--nats URL] [--config FILE]   revoke one node's (or role's) credentials at once
  orchestrator auth list --dir DIR                 who holds which credentials, and who was revoked
  orchestrator node --nats URL --workspace DIR [--kinds explore,worker] [--slots N] [flags]   (same as the node program)
  orchestrator tools list [--config FILE] [--workspace DIR]
  orchestrator tools call NAME 'JSON-ARGS' [--workspace DIR] [--config FILE] [--json]
  orchestrator tools call --script FILE [--workspace DIR] [--config FILE]
  orchestrator config print [--workspace DIR] [--config FILE] [--model M] [--nats URL] [--json]
  orchestrator model --scripted [--listen ADDR] [--script FILE]   a scripted model to try everything without a key
  orchestrator sandbox check [--workspace DIR] [--config FILE]   what this machine's kernel enforces, and each kind's sandbox
  orchestrator version
  orchestrator help COMMAND                        (or COMMAND --help; [flags]: see there)

Model: OPENAI_API_KEY and OPENAI_BASE_URL (any OpenAI-compatible endpoint),
--model or TROUPE_MODEL; see configs/default.yaml for everything else.
Exit codes: 0 done, 1 failed, 2 usage or config error, 3 round or budget
limit reached, 4 done but some sub-agents failed, 130 interrupted.
`

// run is the whole program: it returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return exitUsage
	}
	switch {
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		args = []string{"help"} // the top-level usage
	case args[0] == "help" && len(args) > 1 && wantsHelp(args[1:]):
		args = []string{"help"}
	}
	if args[0] != "help" && wantsHelp(args) {
		if err := printHelp(stdout, helpTopic(args)); err != nil {
			fmt.Fprintf(stderr, "orchestrator: %s\n", strings.TrimPrefix(err.Error(), "usage: "))
			return exitUsage
		}
		return exitOK
	}
	var code int
	var err error
	switch args[0] {
	case "tools":
		code, err = cmdTools(ctx, args[1:], os.Getenv, stdout, stderr)
	case "demo":
		code, err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "run":
		code, err = cmdRun(ctx, args[1:], processEnv(stdin), stdout, stderr, false)
	case "resume":
		code, err = cmdRun(ctx, args[1:], processEnv(stdin), stdout, stderr, true)
	case "watch":
		code, err = cmdWatch(ctx, args[1:], os.Getenv, stdin, stdout, stderr)
	case "config":
		code, err = cmdConfig(args[1:], os.Getenv, stdout)
	case "sandbox":
		code, err = cmdSandbox(args[1:], os.Getenv, stdout)
	case "node":
		code = nodecmd.Run(ctx, args[1:], os.Getenv, stdout, stderr)
	case "mcp":
		code, err = cmdMCP(ctx, args[1:], processEnv(nil), stdin, stdout, stderr)
	case "auth":
		code, err = cmdAuth(ctx, args[1:], os.Getenv, stdout, stderr)
	case "serve":
		code, err = cmdServe(ctx, args[1:], os.Getenv, stdout, stderr)
	case "model":
		code, err = cmdModel(ctx, args[1:], stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, versionLine("orchestrator"))
	case "help", "-h", "--help":
		if len(args) > 1 && args[0] == "help" {
			// help COMMAND
			err = printHelp(stdout, strings.Join(args[1:], " "))
		} else {
			fmt.Fprint(stdout, topUsage)
		}
	default:
		err = usageErr("unknown command %q", args[0])
	}
	return exitFor(code, err, args[0], stderr)
}

// exitFor reports a command's error on stderr and returns the exit code:
// a usage error points at the command's help (or the top-level usage);
// another error fails a command that would have exited 0.
func exitFor(code int, err error, command string, stderr io.Writer) int {
	if err == nil {
		return code
	}
	if errors.Is(err, errUsage) {
		if _, ok := commandHelp[command]; !ok {
			fmt.Fprintf(stderr, "orchestrator: %s\n\n%s", strings.TrimPrefix(err.Error(), "usage: "), topUsage)
			return exitUsage
		}
		fmt.Fprintf(stderr, "orchestrator: %s\n(orchestrator %s --help for usage and examples)\n", strings.TrimPrefix(err.Error(), "usage: "), command)
		return exitUsage
	}
	fmt.Fprintf(stderr, "orchestrator: %v\n", err)
	if code == exitOK {
		code = exitFailed
	}
	return code
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// flagSet parses flags that may appear anywhere among positional arguments
// ("tools call NAME ARGS --json" as well as "--json tools call ...").
type flagSet struct {
	values map[string]string // flags taking a value
	bools  map[string]bool
}

func newFlagSet(valueFlags, boolFlags []string) *flagSet {
	f := &flagSet{values: map[string]string{}, bools: map[string]bool{}}
	for _, n := range valueFlags {
		f.values[n] = ""
	}
	for _, n := range boolFlags {
		f.bools[n] = false
	}
	return f
}

// parse returns the positional arguments. "--" ends flag parsing.
func (f *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" || isNumberish(a) {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := f.bools[name]; ok {
			f.bools[name] = !hasVal || val == "true" || val == "1"
			continue
		}
		if _, ok := f.values[name]; !ok {
			return nil, usageErr("unknown flag %s", a)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, usageErr("flag %s needs a value", a)
			}
			i++
			val = args[i]
		}
		f.values[name] = val
	}
	return pos, nil
}

func isNumberish(s string) bool {
	return len(s) > 1 && s[0] == '-' && s[1] >= '0' && s[1] <= '9'
}

// codeOf is the exit code of a command that did its work or failed with
// err: 0, 2 for a usage error, else 1.
func codeOf(err error) (int, error) {
	switch {
	case err == nil:
		return exitOK, nil
	case errors.Is(err, errUsage):
		return exitUsage, err
	}
	return exitFailed, err
}
