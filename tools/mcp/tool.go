package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/text"
	"github.com/troupe-ai/troupe/tools"
)

// maxToolDescription caps a tool's description from a server.
const maxToolDescription = 2048

// Tool is one tool of an MCP server, as troupe presents it: named
// mcp__<server>__<tool>, its input schema sanitised for the model API,
// arguments checked against that schema before the call, the answer
// rendered as text. Its results pass through the executor like any tool's
// (timeout, truncation and spill).
type Tool struct {
	srv    *Server
	remote string // the tool's name on the server
	spec   tools.Spec
	schema *jsonschema.Schema // what arguments are checked against
}

var _ tools.Tool = (*Tool)(nil)

func newTool(srv *Server, t *sdk.Tool) (*Tool, error) {
	if t == nil || t.Name == "" {
		return nil, errors.New("a tool without a name")
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	clean, err := SanitizeSchema(raw)
	if err != nil {
		return nil, err
	}
	schema, err := checkSchema(clean)
	if err != nil {
		return nil, err
	}
	desc := text.Clip(strings.TrimSpace(cleanText(t.Description)), maxToolDescription)
	if desc == "" {
		desc = "A tool of MCP server " + srv.cfg.Name + "."
	}
	if title := oneLine(t.Title, 100); title != "" && !strings.Contains(desc, title) {
		desc = title + ": " + desc
	}
	desc += fmt.Sprintf("\n(MCP server %s, tool %s.)", srv.cfg.Name, oneLine(t.Name, 100))
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint
	spec := tools.Spec{Name: ToolName(srv.cfg.Name, t.Name), Description: desc, Schema: clean, ReadOnly: readOnly, Effects: true,
		Parallel: tools.ParallelSafe, Tier: tools.TierOnDemand, Timeout: srv.cfg.Timeout,
		Truncation: tools.HeadAndTail(32*1024, 0.25), Kinds: srv.cfg.kinds()}
	return &Tool{srv: srv, remote: t.Name, spec: spec, schema: schema}, nil
}

// checkSchema parses a sanitised schema for argument checks, reading an
// object without additionalProperties as open (JSON Schema's meaning;
// troupe's own tools close theirs explicitly).
func checkSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	var open func(*jsonschema.Schema, int)
	open = func(n *jsonschema.Schema, depth int) {
		if n == nil || depth > maxDepth+2 {
			return
		}
		if n.AdditionalProperties == nil && (n.Type == "object" || n.Properties != nil) {
			n.AdditionalProperties = &jsonschema.Schema{}
		}
		for _, p := range n.Properties {
			open(p, depth+1)
		}
		open(n.Items, depth+1)
		for _, a := range n.AnyOf {
			open(a, depth+1)
		}
	}
	open(&s, 0)
	return &s, nil
}

// Spec is the tool's spec.
func (t *Tool) Spec() tools.Spec { return t.spec }

// Remote is the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// Paths is nil: an MCP tool names no workspace paths troupe knows of.
func (t *Tool) Paths(json.RawMessage) []string { return nil }

// Run checks the arguments and calls the tool on its server: the
// agent's own instance of it when the agent works in a worktree (see
// Server.instanceFor).
func (t *Tool) Run(ctx context.Context, sess *tools.Session, args json.RawMessage) (tools.Result, error) {
	norm, err := tools.ValidateArgs(t.schema, args)
	if err != nil {
		return tools.Errorf("invalid arguments for %s: %v", t.spec.Name, err), nil
	}
	srv, err := t.srv.instanceFor(sess)
	if err != nil {
		return tools.Errorf("%s: the agent has ended: %v", t.spec.Name, err), nil
	}
	res, err := srv.call(ctx, t.spec.Name, t.remote, norm)
	if err != nil {
		return res, err
	}
	return res.WithMeta("mcp_server", t.srv.cfg.Name).WithMeta("mcp_tool", t.remote), nil
}

// rawArgs passes checked arguments through unchanged.
func rawArgs(b []byte) json.RawMessage { return json.RawMessage(b) }
