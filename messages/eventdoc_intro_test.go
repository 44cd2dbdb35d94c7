package messages

// eventsDocIntro opens docs/events.md; the rest is generated from the
// catalog by TestEventsDoc.
const eventsDocIntro = "# Events\n\n" +
	"Every lifecycle event of a run (agents, rounds, model calls, tool calls, tokens, dollars, budget, nodes) is\n" +
	"published on NATS as JSON, on the subject\n\n" +
	"    troupe.evt.<run>.<agent>.<type>\n\n" +
	"(`troupe` is `nats.prefix`; the type's own dots make the last tokens, e.g. `troupe.evt.9f1c2d3e.root.tool.finished`).\n" +
	"The stream `TROUPE_EVENTS` keeps them (7 days or 1 GiB by default), so a watcher that starts late can replay a run.\n" +
	"Go programs decode them with the types of the `messages` package: `messages.Event` is the envelope and\n" +
	"`ev.Decode()` returns the typed payload (`*messages.ToolFinished` for `tool.finished`, ...).\n\n" +
	"This file is generated from the catalog in `messages/catalog.go`; `go test ./messages -run TestEventsDoc -update`\n" +
	"rewrites it. Adding a field is compatible; renaming or removing one is a new envelope version.\n\n" +
	"## Watching\n\n" +
	"`orchestrator run` prints the NATS URL of its embedded server on stderr. With the `nats` CLI:\n\n" +
	"```sh\n" +
	"nats --server nats://127.0.0.1:PORT sub 'troupe.evt.>'                  # everything, live\n" +
	"nats --server nats://127.0.0.1:PORT sub 'troupe.evt.*.*.tool.finished'  # one type, every run and agent\n" +
	"nats --server nats://127.0.0.1:PORT stream view TROUPE_EVENTS           # replay what is stored\n" +
	"```\n\n" +
	"`orchestrator watch --nats URL` shows the live agent tree; `--json` prints one envelope per line.\n" +
	"`watch --run ID` on a run that has finished, or is lost (below), shows it from its start (as `--from-start` does) and ends.\n" +
	"A run whose orchestrator stopped heartbeating its lease before the run finished is lost: `watch` says so on\n" +
	"stderr and, with `--json`, prints one more line, which is watch's own finding and never a stored event\n" +
	"(no `id`, no `seq`; `source` is `watch`), of type `run.lost`:\n\n" +
	"```json\n" +
	"{\"v\":1,\"time\":\"2026-11-29T17:40:00Z\",\"run\":\"9f1c2d3e-...\",\"agent\":\"run\",\"type\":\"run.lost\",\"source\":\"watch\",\n" +
	" \"data\":{\"lease_ms\":10000,\"last_event\":\"2026-11-29T17:38:12Z\",\"workspace\":\"/src/app\",\n" +
	"  \"resume\":\"orchestrator resume 9f1c2d3e-... --workspace /src/app --nats nats://hub:4222 --creds /etc/troupe/requester.creds --placement explore=remote\"}}\n" +
	"```\n\n" +
	"`time` is when watch found it lost, `lease_ms` the run's lease, `last_event` the time of its latest event,\n" +
	"`workspace` where it ran, and `resume` the command that goes on with it: the server watch used, the\n" +
	"`requester.creds` beside the `watcher.creds` it was given (or the file it was given), the kinds it placed on nodes.\n\n" +
	"A Go subscriber needs nats.go and `messages` only (a whole program that prints each run's agent tree:\n" +
	"`examples/monitor`, which imports nothing else of troupe's):\n\n" +
	"```go\n" +
	"nc, _ := nats.Connect(url)\n" +
	"nc.Subscribe(\"troupe.evt.>\", func(m *nats.Msg) {\n" +
	"\tvar ev messages.Event\n" +
	"\tif json.Unmarshal(m.Data, &ev) != nil || ev.Validate() != nil {\n" +
	"\t\treturn // not an event: skip it\n" +
	"\t}\n" +
	"\tif tf, err := messages.DecodeAs[messages.ToolFinished](ev); err == nil {\n" +
	"\t\tfmt.Printf(\"%s %s ran %s in %.1f ms\\n\", ev.Run, ev.Agent, tf.Tool, tf.DurationMS)\n" +
	"\t}\n" +
	"})\n" +
	"```\n\n" +
	"Missing nothing: `seq` counts each agent's events from 1 without gaps (per attempt for remote agents, see\n" +
	"`attempt`), and each stored event has the stream's own sequence number.\n\n" +
	"The run's end is the end of its events: every event of a run is stored before its `run.finished`, those of\n" +
	"its agents on nodes included, so a subscriber that reads the stream in order and stops at `run.finished` (as\n" +
	"`watch` does) has seen them all. This holds by construction, not by a wait: a node ends each task's relay of\n" +
	"events with an end marker, sent after every batch before it was answered; once the root has ended, the\n" +
	"orchestrator waits for the end markers of the tasks whose results it took (not those of a node declared lost;\n" +
	"at most 20 s, for a node that died unnoticed between its result and its marker), then refuses every later batch of the run (counted in\n" +
	"`refused.events` of `run --json`, never stored), and its publisher stores `run.finished` only after every\n" +
	"earlier event of the run is acknowledged by the stream (or counted in `events_dropped`), however long a lost\n" +
	"server holds one back. Nothing of a run is stored after its `run.finished` (until a resume's `run.started`).\n\n" +
	"A run's tool and token metrics (shell calls on file operations, blind writes, cache hits, parallel rounds,\n" +
	"tokens per kind...) are computed from these events alone: [metrics.md](metrics.md) defines them.\n"
