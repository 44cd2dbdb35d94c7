package llmtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// BenchmarkServer measures the server's side of one request, read with
// plain net/http (no SDK decoding): a streamed turn with two tool calls, and
// the same turn not streamed.
func BenchmarkServer(b *testing.B) {
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true}, Repeat: true,
		Turns: []llmtest.Turn{llmtest.Call(llmtest.Tool("grep", `{"pattern":"func main"}`), llmtest.Tool("read_file", `{"path":"go.mod"}`))}}}})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, stream := range []string{"true", "false"} {
		body := `{"model":"m","stream":` + stream + `,"stream_options":{"include_usage":true},` +
			`"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"find main"}]}`
		b.Run("stream="+stream, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
				req.Header.Set(llmtest.HeaderAgent, "bench")
				res, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, res.Body); err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
			}
		})
	}
}
