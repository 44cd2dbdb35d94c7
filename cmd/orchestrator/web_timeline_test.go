package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// storedRun is a finished run of 1,000 agents an hour ago: a root that
// delegates 37 workers, each on one of four nodes, each delegating 26
// explore agents; every 17th explore agent failed, every 29th was
// cancelled, and three were spawned but never started. Every agent makes
// a priced model call.
type storedRun struct {
	id                 string
	events             []messages.Event
	agents             int
	failed, cancelled  int
	neverStarted       []string
	tokens             int64
	budget             int64
	nodeOf             map[string]string // agent → node ID
	firstWorker, child string            // a worker and one of its explore agents
}

func makeStoredRun(t testing.TB) *storedRun {
	s := &storedRun{id: "stored-run", budget: 2_000_000, nodeOf: map[string]string{}}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	seq := map[string]uint64{}
	add := func(run, agent, kind, node string, at time.Duration, typ string, data any) {
		seq[run+agent]++
		ev, err := messages.NewEvent(run, agent, typ, seq[run+agent], data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Time, ev.Kind, ev.Node = base.Add(at), kind, node
		s.events = append(s.events, ev)
	}
	nodes := []string{"node-aaaa0001", "node-bbbb0002", "node-cccc0003", "node-dddd0004"}
	for i, n := range nodes {
		add("nodes", n, "", n, 0, messages.EvtNodeJoined, messages.NodeJoined{Node: n, Name: "builder-" + string(rune('a'+i)), Kinds: []string{"worker", "explore"}, Slots: 8})
	}
	call := func(agent, kind, node string, at time.Duration, in, out int) {
		add(s.id, agent, kind, node, at, messages.EvtRoundStarted, messages.RoundStarted{Round: 1, Model: "gpt-4.1-nano"})
		add(s.id, agent, kind, node, at+700*time.Millisecond, messages.EvtLLMResponse, messages.LLMResponse{Round: 1, Model: "gpt-4.1-nano",
			TokensIn: in, TokensOut: out, CostUSD: float64(in+out) * 1e-7, CostKnown: true, TotalTokens: in + out, TotalCostUSD: float64(in+out) * 1e-7, DurationMS: 700})
		s.tokens += int64(in + out)
	}
	add(s.id, "run", "run", "", 0, messages.EvtRunStarted, messages.RunStarted{Task: "map the repository"})
	add(s.id, "run", "run", "", 0, messages.EvtBudgetAcquired, messages.BudgetAcquired{Agent: "root", Kind: "root", Tokens: s.budget})
	add(s.id, "root", "root", "", 100*time.Millisecond, messages.EvtAgentStarted, messages.AgentStarted{Task: "map the repository"})
	call("root", "root", "", 200*time.Millisecond, 4000, 300)
	s.agents = 1
	var end time.Duration
	for w := range 37 {
		worker, node := fmt.Sprintf("worker-%02d", w), nodes[w%4]
		start := time.Second + time.Duration(w)*800*time.Millisecond
		add(s.id, "root", "root", "", start, messages.EvtAgentSpawned, messages.AgentSpawned{Child: worker, Kind: "worker", Depth: 1, Placement: "remote"})
		add(s.id, worker, "worker", node, start+300*time.Millisecond, messages.EvtAgentStarted, messages.AgentStarted{Task: "look", Depth: 1})
		call(worker, "worker", node, start+400*time.Millisecond, 2000, 100)
		s.agents++
		s.nodeOf[worker] = node
		last := start
		for e := range 26 {
			child := fmt.Sprintf("explore-%02d-%02d", w, e)
			n := w*26 + e
			at := start + time.Second + time.Duration(e)*250*time.Millisecond
			add(s.id, worker, "worker", node, at, messages.EvtAgentSpawned, messages.AgentSpawned{Child: child, Kind: "explore", Depth: 2, Placement: "local"})
			s.agents++
			if s.firstWorker == "" {
				s.firstWorker, s.child = worker, child
			}
			if n%331 == 7 { // never taken
				s.neverStarted = append(s.neverStarted, child)
				continue
			}
			s.nodeOf[child] = node
			add(s.id, child, "explore", node, at+400*time.Millisecond, messages.EvtAgentStarted, messages.AgentStarted{Task: "look", Depth: 2})
			call(child, "explore", node, at+500*time.Millisecond, 900, 40)
			add(s.id, child, "explore", node, at+1300*time.Millisecond, messages.EvtToolStarted, messages.ToolStarted{Round: 1, CallID: "c1", Tool: "grep"})
			add(s.id, child, "explore", node, at+1400*time.Millisecond, messages.EvtToolFinished, messages.ToolFinished{Round: 1, CallID: "c1", Tool: "grep", DurationMS: 100})
			done := at + time.Duration(2000+(n%7)*700)*time.Millisecond
			status, typ, errText := "completed", messages.EvtAgentFinished, ""
			switch {
			case n%17 == 0:
				status, typ, errText = "failed", messages.EvtAgentFailed, "model: 429 too many requests"
				s.failed++
			case n%29 == 0:
				status, typ = "cancelled", messages.EvtAgentCancelled
				s.cancelled++
			}
			add(s.id, child, "explore", node, done, typ, messages.AgentEnded{Status: status, Error: errText, Rounds: 1})
			last = max(last, done)
		}
		add(s.id, worker, "worker", node, last+200*time.Millisecond, messages.EvtAgentFinished, messages.AgentEnded{Status: "completed", Rounds: 1})
		end = max(end, last+200*time.Millisecond)
	}
	add(s.id, "root", "root", "", end+time.Second, messages.EvtAgentFinished, messages.AgentEnded{Status: "completed", Rounds: 2})
	add(s.id, "run", "run", "", end+time.Second, messages.EvtRunFinished, messages.RunFinished{Status: "completed", Tokens: s.tokens,
		Agents: s.agents, Budget: &messages.BudgetSnapshot{Limits: messages.BudgetLimits{Tokens: s.budget}, Used: messages.BudgetUsage{Tokens: s.tokens}}})
	return s
}

// publish puts the run's events in the events stream of the server at
// url (serve --no-auth), and its nodes in the node registry, live.
func (s *storedRun) publish(t testing.TB, url string) {
	ctx := context.Background()
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: url}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kv, err := conn.JetStream().KeyValue(ctx, conn.Names().Nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range s.events {
		if j, err := messages.DecodeAs[messages.NodeJoined](ev); err == nil && ev.Type == messages.EvtNodeJoined {
			info, _ := json.Marshal(messages.NodeInfo{ID: j.Node, Name: j.Name, Kinds: j.Kinds, Slots: j.Slots, Free: j.Slots - 3, BeatMS: 3_600_000})
			if _, err := kv.Put(ctx, j.Node, info); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub, err := conn.NewPublisher(bus.PublisherOptions{Queue: len(s.events) + 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range s.events {
		pub.Emit(ev)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// paintProbe, run in the page before its own scripts, records when the
// timeline of n agents is first on screen (the first task after the
// frame that has its bars: style, layout and paint included) and any
// Content-Security-Policy violation.
func paintProbe(n int) string {
	return fmt.Sprintf(`window.__paint = null; window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
new MutationObserver(() => {
  if (window.__paint === null && document.querySelector('svg.timeline[data-rows="%d"] rect.bar')) {
    window.__paint = 0; requestAnimationFrame(() => setTimeout(() => { window.__paint = performance.now(); }));
  }
}).observe(document, {childList: true, subtree: true});`, n)
}

// timelineBars scrolls the page's timeline from its top to its end (the
// page draws the rows in view) and returns each agent's bar's classes
// and the labels' indents, in row order.
func timelineBars(t testing.TB, page *browser) (bars map[string]string, order []string) {
	var got []struct{ Agent, Class, X string }
	// The page redraws itself whole when what it shows changes (the
	// server's stats, every few seconds), so the box is looked up afresh
	// each step, and a step whose scroll a redraw undid is taken again.
	if err := json.Unmarshal([]byte(page.eval(`(async () => {
  const boxNow = () => document.querySelector(".timeline-box"), out = new Map(), frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r)));
  const take = box => { for (const b of box.querySelectorAll("rect.bar")) if (!out.has(b.dataset.agent)) {
    const label = box.querySelector('text.label[data-agent="' + CSS.escape(b.dataset.agent) + '"]');
    out.set(b.dataset.agent, {agent: b.dataset.agent, class: b.getAttribute("class"), x: label ? label.getAttribute("x") : ""}); } };
  for (let top = 0, steps = 0; steps < 10000; steps++) {
    boxNow().scrollTop = top; await frame(); await frame();
    const box = boxNow(), end = box.scrollHeight - box.clientHeight;
    if (Math.abs(box.scrollTop - Math.min(top, end)) > 1) continue; // redrawn meanwhile
    take(box);
    if (box.scrollTop >= end - 1) break;
    top += box.clientHeight;
  }
  boxNow().scrollTop = 0; await frame();
  return JSON.stringify([...out.values()]);
})()`)), &got); err != nil {
		t.Fatalf("the timeline's bars: %v", err)
	}
	bars = map[string]string{}
	for _, b := range got {
		bars[b.Agent] = b.Class
		order = append(order, b.Agent+"@"+b.X)
	}
	return bars, order
}

// probedBrowser is a headless Chromium whose pages run paintProbe(n).
func probedBrowser(t testing.TB, n int) *browser {
	page := startBrowser(t, "about:blank")
	page.call("Page.enable", map[string]any{})
	page.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": paintProbe(n)})
	return page
}

// firstPaint loads pageURL afresh (a new document: a query of its own
// before the fragment) and returns how long after navigation the
// timeline showed all its bars.
func firstPaint(t testing.TB, page *browser, pageURL string) time.Duration {
	base, frag, _ := strings.Cut(pageURL, "#")
	page.navigate(fmt.Sprintf("%s?load=%d#%s", strings.TrimSuffix(base, "/")+"/", time.Now().UnixNano(), frag))
	deadline := time.Now().Add(time.Minute)
	for {
		if v, err := strconv.ParseFloat(page.eval("window.__paint"), 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timeline never showed its bars: paint %s (%s), %s bars", page.eval("window.__paint"), page.eval("typeof window.__csp"), page.eval(`document.querySelectorAll("svg.timeline rect.bar").length`))
		}
		<-time.After(20 * time.Millisecond)
	}
}

// A stored run of 1,000 agents in headless Chromium: the timeline has one
// bar per agent, nested under its parent, colored by status, its node in
// the hover text; the tokens chart, the budget against its limit and the
// nodes are shown; nothing breaks the page's policy; a screenshot is
// saved. How soon the timeline is painted is measured and logged
// (BenchmarkWebViewFirstPaint measures it too), not asserted.
func TestWebViewTimelineOfStoredRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	s, web := serveWithHTTP(t)
	run := makeStoredRun(t)
	if run.agents != 1000 {
		t.Fatalf("the stored run has %d agents", run.agents)
	}
	run.publish(t, s.url)
	page := probedBrowser(t, run.agents)
	pageURL := "http://" + web + "/#/run/" + run.id
	// Eight loads, each a new document: more than the six connections
	// Chromium allows a host, so a page kept for back/forward that held
	// its event stream would leave the seventh load waiting.
	var loads []time.Duration
	for range 8 {
		loads = append(loads, firstPaint(t, page, pageURL))
	}
	slices.Sort(loads)
	t.Logf("first paint of the 1,000-agent timeline: %v (of %v)", loads[len(loads)/2], loads)

	count := func(sel string) int {
		n, _ := strconv.Atoi(page.eval(fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		return n
	}
	// The page draws the rows in view: a screenful of a thousand, and
	// every one of them as the timeline scrolls to it.
	if n := count("svg.timeline rect.bar"); n >= run.agents/4 {
		t.Errorf("%d bars drawn at once, want about a screenful", n)
	}
	bars, order := timelineBars(t, page)
	if len(bars) != run.agents {
		t.Errorf("%d bars, want one per agent (%d)", len(bars), run.agents)
	}
	byStatus := map[string]int{}
	for _, class := range bars {
		byStatus[strings.TrimPrefix(class, "bar ")]++
	}
	if want := map[string]int{"failed": run.failed, "cancelled": run.cancelled, "spawned open": len(run.neverStarted),
		"completed": run.agents - run.failed - run.cancelled - len(run.neverStarted)}; !maps.Equal(byStatus, want) {
		t.Errorf("bars by status %v, want %v", byStatus, want)
	}
	// Rows in tree order: the root, then its first worker, then the
	// worker's explore agents, each indented under its parent.
	if want := []string{"root@4", run.firstWorker + "@16", run.child + "@28"}; len(order) < 3 || !slices.Equal(order[:3], want) {
		t.Errorf("first rows %q, want %q", order[:min(3, len(order))], want)
	}
	// Hovering a row (a real mouse event) shows its text.
	tip := page.eval(fmt.Sprintf(`(() => { const bar = document.querySelector('svg.timeline rect.bar[data-agent=%q]');
  bar.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  return bar.querySelector("title").textContent; })()`, run.child))
	if !strings.Contains(tip, "builder-a ("+run.nodeOf[run.child]+")") || !strings.Contains(tip, "explore") {
		t.Errorf("hover text %q lacks the node's name and the kind", tip)
	}
	if got := page.eval(`document.getElementById("budget-tokens").getAttribute("max") + " " + document.getElementById("budget-tokens").getAttribute("value")`); got != fmt.Sprintf("%d %d", run.budget, run.tokens) {
		t.Errorf("budget meter %q, want max %d value %d", got, run.budget, run.tokens)
	}
	// The run's own total, though some of its agents' events are stored
	// after its end.
	if got := page.eval(`document.getElementById("run-tokens").textContent`); got != strconv.FormatInt(run.tokens, 10) {
		t.Errorf("the run's tokens show as %s, want %d", got, run.tokens)
	}
	if count("svg.chart.tokens polyline") != 1 || count("svg.chart.cost polyline") != 1 {
		t.Error("no tokens or cost chart")
	}
	if txt := page.eval("document.body.innerText"); strings.Contains(txt, "cost unknown") {
		t.Errorf("a priced run said cost unknown:\n%.600s", txt)
	}
	// The registry's four nodes, each with 5 of its 8 slots free.
	if got := page.eval(`[...document.querySelectorAll("table.nodes td.free")].map(e => e.textContent).join()`); got != "5,5,5,5" {
		t.Errorf("the nodes' free slots: %q", got)
	}
	if v := page.eval("window.__csp.join()"); v != "" {
		t.Errorf("the page broke its content security policy: %s", v)
	}
	if n := count("table.agents tr"); n != 101 {
		t.Errorf("the run's table has %d rows, want a header and the first 100 agents", n)
	}
	// The table of them all: a route of the page (its hash), which
	// Chromium changes in place, with no load to wait for.
	page.eval(fmt.Sprintf("location.hash = %q", "#/run/"+run.id+"/agents"))
	pollUntil(t, "the table of every agent", func() bool { return count("table.agents tr") == run.agents+1 })
	firstPaint(t, page, pageURL)
	page.screenshot(filepath.Join(t.ArtifactDir(), "web-view-timeline-1000.png"))
	page.eval("window.scrollTo(0, document.body.scrollHeight)")
	page.screenshot(filepath.Join(t.ArtifactDir(), "web-view-timeline-1000-end.png"))
	t.Logf("screenshot in %s", t.ArtifactDir())
}

// Hostile strings from the wire show as text on every page of the web
// view, on a server of their own (a page that replays a 1,000-agent run
// keeps Chromium busy past the test browser's navigation timeout).
func TestWebViewShowsHostileStringsAsText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	s, web := serveWithHTTP(t)
	checkHostile(t, probedBrowser(t, 1), s.url, web)
}

// BenchmarkWebViewFirstPaint is how soon after navigation headless
// Chromium shows the timeline of a stored run of 1,000 agents (7,000
// events replayed from NATS through /events), in ms per load.
func BenchmarkWebViewFirstPaint(b *testing.B) {
	ctx := context.Background()
	emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { emb.Shutdown(ctx) })
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	if err := conn.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		b.Fatal(err)
	}
	run := makeStoredRun(b)
	run.publish(b, emb.URL())
	srv := httptest.NewServer(watch.NewWeb(watch.WebOptions{Conn: conn}).Handler())
	b.Cleanup(srv.Close) // after the browser's cleanup has closed its event stream
	page := probedBrowser(b, run.agents)
	var total, browserCPU, serverCPU time.Duration
	for b.Loop() {
		browser, server := page.cpu(), selfCPU()
		total += firstPaint(b, page, srv.URL+"/#/run/"+run.id)
		browserCPU += page.cpu() - browser
		serverCPU += selfCPU() - server
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/paint")
	b.ReportMetric(float64(browserCPU.Milliseconds())/float64(b.N), "browser-cpu-ms/paint")
	b.ReportMetric(float64(serverCPU.Milliseconds())/float64(b.N), "server-cpu-ms/paint")
}

// cpu is the processor time Chromium's processes have used so far (user
// and system, from /proc): the work a load costs, whatever else the
// machine runs meanwhile.
func (b *browser) cpu() time.Duration {
	var ticks int64
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(stat), ") ") // after the command's name
		f := strings.Fields(rest)
		if !ok || len(f) < 13 || f[2] != strconv.Itoa(b.pgid) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// selfCPU is this process's processor time so far: the server's side.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostile is markup where the page shows text from the wire.
const hostile = `<img src=x id=pwned onerror="document.title='pwned'"><em class=pwned>em</em>`

// checkHostile publishes a run whose every free-text field (its task
// and status, an agent's kind, node name, model, tool, error and task) is
// hostile markup, and checks that the runs list, the run's page (its
// timeline's hover text included) and the agent's page show it as text.
func checkHostile(t *testing.T, page *browser, natsURL, web string) {
	t.Helper()
	var evs []messages.Event
	add := func(run, agent, node, typ string, data any) {
		ev, err := messages.NewEvent(run, agent, typ, uint64(len(evs)+1), data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Kind, ev.Node = hostile, node
		evs = append(evs, ev)
	}
	add("nodes", "node-h", "node-h", messages.EvtNodeJoined, messages.NodeJoined{Node: "node-h", Name: hostile, Slots: 1})
	add("hostile-run", "run", "", messages.EvtRunStarted, messages.RunStarted{Task: hostile})
	add("hostile-run", "root", "node-h", messages.EvtAgentStarted, messages.AgentStarted{Task: hostile})
	add("hostile-run", "root", "node-h", messages.EvtLLMResponse, messages.LLMResponse{Model: hostile, TokensIn: 1, FinishReason: hostile})
	add("hostile-run", "root", "node-h", messages.EvtToolStarted, messages.ToolStarted{Tool: hostile, CallID: hostile})
	add("hostile-run", "root", "node-h", messages.EvtAgentFailed, messages.AgentEnded{Status: hostile, Error: hostile})
	add("hostile-run", "run", "", messages.EvtRunFinished, messages.RunFinished{Status: hostile})
	(&storedRun{events: evs}).publish(t, natsURL)
	for _, u := range []string{"/#/", "/#/run/hostile-run", "/#/run/hostile-run/agent/root"} {
		page.navigate("about:blank")
		page.navigate("http://" + web + u)
		pollUntil(t, "the hostile run shows on "+u, func() bool {
			if strings.HasSuffix(u, "hostile-run") {
				page.eval(`(r => r && r.dispatchEvent(new MouseEvent("mouseover", {bubbles: true})))(document.querySelector("svg.timeline rect.bar"))`)
				return strings.Contains(page.eval(`(document.querySelector("svg.timeline title") || {}).textContent`), hostile)
			}
			return strings.Contains(page.eval("document.body.innerText"), hostile)
		})
		if n := page.eval(`document.querySelectorAll("#pwned, .pwned").length`); n != "0" || page.eval("document.title") != "troupe" {
			t.Errorf("%s: hostile markup became elements (%s) or ran", u, n)
		}
	}
}
