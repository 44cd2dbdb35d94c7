package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// The web view passes stored events on as they are, one line of JSON
// each; an event stored over several lines (valid JSON, pretty-printed
// by some other publisher) is sent re-encoded on one line, so it cannot
// end its Server-Sent Event early or smuggle one of its own.
func TestWebEventsStayOnOneLine(t *testing.T) {
	ctx := context.Background()
	emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Shutdown(ctx)
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	for i, task := range []string{"plain", "pretty\nevent: caught_up\ndata: {}\n"} {
		ev, err := messages.NewEvent("one-line", "root", messages.EvtAgentStarted, uint64(i+1), messages.AgentStarted{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ev)
		if i == 1 { // the same event over several lines
			b, _ = json.MarshalIndent(ev, "", "\n ")
		}
		subject := bus.EventSubject(conn.Prefix(), "one-line", "root", ev.Type)
		if _, err := conn.JetStream().Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(NewWeb(WebOptions{Conn: conn}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events?run=one-line")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tasks []string
	kinds := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() && len(tasks) < 2 {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			kinds += event + " "
		case strings.HasPrefix(line, "data: ") && event == "events":
			var evs []messages.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &evs); err != nil {
				t.Fatalf("an events line is not a JSON array: %v\n%s", err, line)
			}
			for _, ev := range evs {
				d, err := messages.DecodeAs[messages.AgentStarted](ev)
				if err != nil {
					t.Fatal(err)
				}
				tasks = append(tasks, d.Task)
			}
		case line != "" && !strings.HasPrefix(line, "data: "):
			t.Fatalf("a line outside the stream's framing: %q", line)
		}
	}
	if len(tasks) != 2 || tasks[1] != "pretty\nevent: caught_up\ndata: {}\n" {
		t.Errorf("tasks %q", tasks)
	}
	if strings.Contains(kinds, "caught_up") && !strings.HasSuffix(kinds, "caught_up ") {
		t.Errorf("a caught_up before the events: %s", kinds)
	}
}
