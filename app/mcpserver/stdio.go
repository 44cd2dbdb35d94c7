package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine is the longest line read on stdin (the SDK's own default).
const maxLine = mcp.DefaultMaxLineLength

// ServeStdio serves one MCP session on in and out (newline-delimited
// JSON-RPC) until in ends or ctx does. A line that is not a JSON-RPC
// message is answered with an error (-32700 not JSON, -32600 not a
// request; batches are refused alike) and the session carries on: one bad
// line costs neither the server nor its runs.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(screen(in, pw, w)) }()
	defer pr.Close()
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: w})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		return err
	}
	return nil
}

// lineWriter writes whole messages to out, one at a time (the SDK's and
// screen's answers never interleave); closing it leaves out open.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// screen copies the JSON-RPC messages of in to fwd, one per line, and
// answers every other line on w itself. It returns when in ends (nil) or
// fwd is closed.
func screen(in io.Reader, fwd io.Writer, w io.Writer) error {
	br := bufio.NewReaderSize(in, 64*1024)
	for {
		line, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if rpcErr, id := check(line, tooLong); rpcErr != nil {
				if werr := answer(w, id, rpcErr); werr != nil {
					return werr
				}
			} else if _, werr := fwd.Write(append(bytes.TrimSpace(line), '\n')); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line (without its newline), at most maxLine bytes
// of it kept; tooLong says the rest was dropped.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > maxLine {
			tooLong = true
		} else {
			line = append(line, part...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimRight(line, "\r\n"), tooLong, err
		}
	}
}

// check says what is wrong with a line, if anything, and the ID to
// answer with (null when there is none to read).
func check(line []byte, tooLong bool) (*jsonrpc.Error, any) {
	if tooLong {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: a message longer than %d bytes", maxLine)}, nil
	}
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: the line is not JSON (one JSON-RPC message per line)"}, nil
	}
	if line[0] == '[' {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: JSON-RPC batches are not supported; send one message per line"}, nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Result == nil && resp.Error == nil {
		err = errors.New("a response needs a result or an error (and a request a method)")
	}
	if err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		id := probe.ID
		if _, ok := id.(string); !ok {
			if _, ok := id.(float64); !ok {
				id = nil
			}
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: %v", err)}, id
	}
	return nil, nil
}

// answer writes a JSON-RPC error response.
func answer(w io.Writer, id any, e *jsonrpc.Error) error {
	b, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
