package runner

import "testing"

// The resume command names every flag the run needs, only those, and
// nothing secret.
func TestResumeCommand(t *testing.T) {
	for _, tc := range []struct {
		name, workspace, config, nats, creds string
		placement                            map[string]string
		want                                 string
	}{
		{"embedded", "/w", "", "", "", nil, "orchestrator resume r1 --workspace /w"},
		{"every flag", "/w", "team.yaml", "nats://127.0.0.1:4222", "", map[string]string{"worker": "auto", "explore": "remote", "review": "local"},
			"orchestrator resume r1 --workspace /w --config team.yaml --nats nats://127.0.0.1:4222 --placement explore=remote,worker=auto"},
		{"local only", ".", "", "", "", map[string]string{"explore": "local"}, "orchestrator resume r1 --workspace ."},
		{"quoted", "/my work/it's", "", "", "", nil, `orchestrator resume r1 --workspace '/my work/it'\''s'`},
		{"password", "/w", "", "nats://ann:s3cret@h:4222,nats://h2:4222", "", nil, "orchestrator resume r1 --workspace /w --nats nats://ann:xxxxx@h:4222,nats://h2:4222"},
		{"creds", "/w", "", "nats://h:4222", "/etc/troupe/requester.creds", nil,
			"orchestrator resume r1 --workspace /w --nats nats://h:4222 --creds /etc/troupe/requester.creds"},
		{"token", "/w", "", "nats://tok3n@h:4222", "", nil, "orchestrator resume r1 --workspace /w --nats nats://xxxxx@h:4222"},
	} {
		if got := resumeCommand("r1", tc.workspace, tc.config, tc.nats, tc.creds, tc.placement); got != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
