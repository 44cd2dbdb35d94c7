package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Flood plays a model whose answer is enormous: TextBytes of answer text
// and/or one tool call (named ToolName, default "write_file") whose
// arguments are {"content": "..."} of ArgBytes bytes. The bytes are made
// as they are written, in events (or body writes) of Chunk bytes (default
// 32 KiB), so the server never holds the answer: a test measures the
// client's memory, not the server's. The turn's other fields are ignored.
type Flood struct {
	TextBytes int64  `json:"text_bytes,omitempty"`
	ArgBytes  int64  `json:"arg_bytes,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	Chunk     int    `json:"chunk,omitempty"`
}

func (f *Flood) validate() error {
	switch {
	case f.TextBytes < 0 || f.ArgBytes < 0 || f.Chunk < 0:
		return fmt.Errorf("flood: sizes must not be negative")
	case f.TextBytes == 0 && f.ArgBytes == 0:
		return fmt.Errorf("flood: set text_bytes or arg_bytes")
	}
	return nil
}

func (f *Flood) chunk() int {
	if f.Chunk > 0 {
		return f.Chunk
	}
	return 32 << 10
}

func (f *Flood) tool() string {
	if f.ToolName != "" {
		return f.ToolName
	}
	return "write_file"
}

// Flooded returns a turn whose answer is n bytes of text, streamed.
func Flooded(textBytes, argBytes int64) Turn {
	return Turn{Flood: &Flood{TextBytes: textBytes, ArgBytes: argBytes}}
}

// floodWriter writes a flood as events or as one JSON body; write reports
// false once the client has gone.
type floodWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	stream bool
	id     string
	model  string
	buf    []byte
	fill   string // Chunk bytes of 'x'
}

func (s *Server) writeFlood(w http.ResponseWriter, rec *Recorded, f *Flood, c *commit) {
	fw := &floodWriter{w: w, rc: http.NewResponseController(w), stream: rec.Stream,
		id: "chatcmpl-" + strconv.Itoa(rec.Seq), model: rec.Model, fill: string(bytes.Repeat([]byte{'x'}, f.chunk()))}
	if fw.model == "" {
		fw.model = "llmtest"
	}
	callID := "call_" + strconv.FormatInt(s.callSeq.Add(1), 10)
	finish := "stop"
	if f.ArgBytes > 0 {
		finish = "tool_calls"
	}
	if !fw.begin() || !fw.text(f.TextBytes) || !fw.call(callID, f.tool(), f.ArgBytes) || !fw.end(finish) {
		c.gone()
		return
	}
	c.done(true)
}

func (fw *floodWriter) begin() bool {
	if fw.stream {
		fw.w.Header().Set("Content-Type", "text/event-stream")
		fw.w.WriteHeader(http.StatusOK)
		return fw.event(`{"role":"assistant","content":""}`, "")
	}
	fw.w.Header().Set("Content-Type", "application/json")
	fw.w.WriteHeader(http.StatusOK)
	return fw.raw(fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"`,
		fw.id, created, fw.model))
}

// text writes n bytes of answer text.
func (fw *floodWriter) text(n int64) bool {
	for n > 0 {
		k := min(n, int64(len(fw.fill)))
		n -= k
		var ok bool
		if fw.stream {
			ok = fw.event(`{"content":"`+fw.fill[:k]+`"}`, "")
		} else {
			ok = fw.raw(fw.fill[:k])
		}
		if !ok {
			return false
		}
	}
	return true
}

// call writes one tool call with n bytes of arguments ({"content":"xx..."}).
func (fw *floodWriter) call(id, name string, n int64) bool {
	if n == 0 {
		return fw.stream || fw.raw(`"`)
	}
	if !fw.stream {
		if !fw.raw(fmt.Sprintf(`","tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":"{\"content\":\"`, id, name)) {
			return false
		}
		for n > 0 {
			k := min(n, int64(len(fw.fill)))
			n -= k
			if !fw.raw(fw.fill[:k]) {
				return false
			}
		}
		return fw.raw(`\"}"}}]`)
	}
	head := fmt.Sprintf(`{"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, id, name)
	if !fw.event(head, "") || !fw.argPiece(`{\"content\":\"`) {
		return false
	}
	for n > 0 {
		k := min(n, int64(len(fw.fill)))
		n -= k
		if !fw.argPiece(fw.fill[:k]) {
			return false
		}
	}
	return fw.argPiece(`\"}`)
}

func (fw *floodWriter) argPiece(p string) bool {
	return fw.event(`{"tool_calls":[{"index":0,"function":{"arguments":"`+p+`"}}]}`, "")
}

func (fw *floodWriter) end(finish string) bool {
	if !fw.stream {
		return fw.raw(fmt.Sprintf(`},"finish_reason":%q}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, finish))
	}
	if !fw.event(`{}`, finish) {
		return false
	}
	return fw.raw("data: [DONE]\n\n") && fw.rc.Flush() == nil
}

// event writes one SSE chunk whose choice has delta (JSON) and finish.
func (fw *floodWriter) event(delta, finish string) bool {
	fr := "null"
	if finish != "" {
		b, _ := json.Marshal(finish)
		fr = string(b)
	}
	fw.buf = append(fw.buf[:0], `data: {"id":"`...)
	fw.buf = append(fw.buf, fw.id...)
	fw.buf = append(fw.buf, `","object":"chat.completion.chunk","created":1700000000,"model":"`...)
	fw.buf = append(fw.buf, fw.model...)
	fw.buf = append(fw.buf, `","choices":[{"index":0,"delta":`...)
	fw.buf = append(fw.buf, delta...)
	fw.buf = append(fw.buf, `,"finish_reason":`...)
	fw.buf = append(fw.buf, fr...)
	fw.buf = append(fw.buf, "}]}\n\n"...)
	if _, err := fw.w.Write(fw.buf); err != nil {
		return false
	}
	return fw.rc.Flush() == nil
}

// raw writes s as it is.
func (fw *floodWriter) raw(s string) bool {
	_, err := fw.w.Write([]byte(s))
	return err == nil
}
