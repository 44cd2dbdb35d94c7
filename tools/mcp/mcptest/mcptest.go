// Package mcptest is a small MCP server for tests, built with the official
// Go SDK: tools that behave (echo, add), and tools that misbehave the way
// real servers do (crash the process, hang, answer with megabytes or with
// control characters, break the protocol, offer schemas no model API
// takes). Tests run it as a real subprocess by re-executing their own test
// binary: a package's TestMain calls ServeIfAsked, and the server's config
// uses Command and Env. HTTPHandler serves the same tools over streamable
// HTTP.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvVar, set to "stdio" in a test binary's environment, makes
// ServeIfAsked serve the test server on stdin/stdout instead of testing.
const EnvVar = "TROUPE_MCPTEST"

// ServeIfAsked serves the test server over stdio and exits when the
// process was started as one (EnvVar is set); otherwise it returns at once.
// Call it first thing in TestMain.
func ServeIfAsked() {
	if os.Getenv(EnvVar) != "stdio" {
		return
	}
	Serve()
}

// Serve serves the test server on stdin/stdout and exits.
func Serve() {
	fmt.Fprintln(os.Stderr, "mcptest: serving on stdio")
	err := NewServer().Run(context.Background(), &sdk.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
	}
	atExit.Lock()
	for _, f := range atExit.writes {
		_ = os.WriteFile(f, []byte("written at exit\n"), 0o644)
	}
	atExit.Unlock()
	os.Exit(0)
}

// Build compiles the test server as a program (package mcptestserver)
// into a temporary directory of t and returns its path: for tests in
// packages whose TestMain does not call ServeIfAsked, and for programs
// under test that take a server command from their configuration.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/troupe-ai/troupe/tools/mcp/mcptest/mcptestserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	return bin
}

// Command is the command line that starts the test server: this test
// binary, which serves when Env is in its environment.
func Command() []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return []string{exe, "-test.run=^$"}
}

// Env is the environment the server's config must give it.
func Env() map[string]string { return map[string]string{EnvVar: "stdio"} }

// HTTPHandler serves the test server over streamable HTTP.
func HTTPHandler() http.Handler {
	srv := NewServer()
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
}

// Tool names of the test server.
const (
	Echo      = "echo"          // {text}: "echo: <text>"
	Add       = "add"           // {a, b}: their sum, a read-only tool
	Crash     = "crash"         // the process exits with status 3, after a word on stderr
	Hang      = "hang"          // never answers, deaf to cancellation
	Slow      = "slow"          // answers only when cancelled
	Huge      = "huge"          // {bytes}: that many bytes of text
	Hostile   = "hostile"       // control characters, escapes, invalid UTF-8, an image, links
	Garbage   = "garbage"       // writes a line that is not JSON-RPC to stdout
	ReadEnv   = "env"           // {name}: the value of an environment variable, or "(unset)"
	WriteFile = "write_file"    // {path, content}: writes content ("x" if none) there: "wrote <path>", or the error
	ReadFile  = "read_file"     // {path}: the file's content, or the error
	AtExit    = "write_at_exit" // {path}: writes "written at exit" there when the server is asked to exit (its stdin closes)
	Cwd       = "cwd"           // the server's working directory
	Pid       = "pid"           // the server's process ID
	Fail      = "fail"          // an error result
	Refs      = "refs"          // a schema with $defs and $ref
	Giant     = "giant_schema"  // a schema far over the size limit
	Remote    = "remote_ref"    // a schema with a $ref to another document
	OddName   = "odd.name v2"   // a name model APIs refuse
	TopAnyOf  = "top_anyof"     // a schema with anyOf at the top
	NoSchema  = "no_properties" // {"type":"object"} only
	Structure = "structured"    // structured content only
)

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func args(req *sdk.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

func add(s *sdk.Server, name, desc, schema string, readOnly bool, h sdk.ToolHandler) {
	t := &sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}
	if readOnly {
		t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
	}
	s.AddTool(t, h)
}

// NewServer returns the test server with all its tools.
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	add(s, Echo, "Echoes the text back.", `{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}`, false,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(fmt.Sprintf("echo: %v", args(r)["text"])), nil
		})
	add(s, Add, "Adds two numbers.", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a, _ := args(r)["a"].(float64)
			b, _ := args(r)["b"].(float64)
			return text(fmt.Sprint(a + b)), nil
		})
	add(s, Crash, "Exits the server process.", `{"type":"object"}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	add(s, Hang, "Never answers.", `{"type":"object"}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {} // deaf to cancellation, as a stuck server is
		})
	add(s, Slow, "Answers when cancelled.", `{"type":"object"}`, false,
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	add(s, Huge, "Answers with many bytes.", `{"type":"object","properties":{"bytes":{"type":"integer","minimum":0}},"required":["bytes"]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n, _ := args(r)["bytes"].(float64)
			line := "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstu\n"
			return text(strings.Repeat(line, int(n)/len(line)+1)[:int(n)]), nil
		})
	add(s, Hostile, "Answers with hostile content.", `{"type":"object"}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "bell\a esc\x1b[31mred\x1b[0m osc\x1b]0;title\a nul\x00 bad\xff\xfe utf8 rtl\u202eevil\r\nend"},
				&sdk.ImageContent{Data: []byte("\x89PNG not really"), MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "file:///etc/passwd", Name: "passwd\x1b[2J"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://blob", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2, 3}}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://note", Text: "a note"}},
			}}, nil
		})
	add(s, Garbage, "Breaks the protocol.", `{"type":"object"}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			_, _ = os.Stdout.WriteString("this is not JSON-RPC\n")
			select {}
		})
	addFileTools(s)
	add(s, ReadEnv, "Reads an environment variable.", `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			name, _ := args(r)["name"].(string)
			v, ok := os.LookupEnv(name)
			if !ok {
				v = "(unset)"
			}
			return text(v), nil
		})
	add(s, Pid, "Says the server's process ID.", `{"type":"object"}`, true,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(fmt.Sprint(os.Getpid())), nil
		})
	add(s, Fail, "Always fails.", `{"type":"object"}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := &sdk.CallToolResult{}
			r.SetError(fmt.Errorf("the widget is broken"))
			return r, nil
		})
	addSchemaTools(s)
	return s
}

// atExit holds the files a stdio server writes when it is asked to exit.
var atExit struct {
	sync.Mutex
	writes []string
}

// addFileTools adds the tools that touch files.
func addFileTools(s *sdk.Server) {
	add(s, AtExit, "Writes a file when the server exits.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, false,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			path, _ := args(r)["path"].(string)
			atExit.Lock()
			atExit.writes = append(atExit.writes, path)
			atExit.Unlock()
			return text("will write " + path + " at exit"), nil
		})
	add(s, WriteFile, "Writes a file.", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path"]}`, false,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			path, _ := args(r)["path"].(string)
			content, ok := args(r)["content"].(string)
			if !ok {
				content = "x"
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return text(err.Error()), nil
			}
			return text("wrote " + path), nil
		})
	add(s, ReadFile, "Reads a file.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			path, _ := args(r)["path"].(string)
			b, err := os.ReadFile(path)
			if err != nil {
				return text(err.Error()), nil
			}
			return text(string(b)), nil
		})
	add(s, Cwd, "Says the server's working directory.", `{"type":"object"}`, true,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			dir, err := os.Getwd()
			if err != nil {
				return text(err.Error()), nil
			}
			return text(dir), nil
		})
}

// addSchemaTools adds the tools whose schemas or answers test the
// client's handling of their shape.
func addSchemaTools(s *sdk.Server) {
	add(s, Refs, "Takes a point.", `{"type":"object","$defs":{"pt":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}},"properties":{"at":{"$ref":"#/$defs/pt"}},"required":["at"]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			b, _ := json.Marshal(args(r)["at"])
			return text("at " + string(b)), nil
		})
	props := map[string]any{}
	for i := range 300 {
		props[fmt.Sprintf("field_%03d", i)] = map[string]any{"type": "string", "description": strings.Repeat("a very long description ", 40)}
	}
	giant, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	add(s, Giant, "Has a giant schema.", string(giant), false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("giant"), nil })
	add(s, Remote, "Refers elsewhere.", `{"type":"object","properties":{"x":{"$ref":"https://example.com/schema.json"}}}`, false,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("remote"), nil })
	add(s, OddName, "Has an odd name.", `{"type":"object"}`, true,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("odd"), nil })
	add(s, TopAnyOf, "Takes an id or a name.", `{"type":"object","anyOf":[{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]},{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}]}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			b, _ := json.Marshal(args(r))
			return text(string(b)), nil
		})
	add(s, NoSchema, "Takes anything.", `{"type":"object"}`, true,
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			b, _ := json.Marshal(args(r))
			return text(string(b)), nil
		})
	add(s, Structure, "Answers with structured content only.", `{"type":"object"}`, true,
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"temp_c": 21}}, nil
		})
}
