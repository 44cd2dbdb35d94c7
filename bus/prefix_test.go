package bus

import (
	"errors"
	"testing"

	"github.com/rs/zerolog"
)

// Two prefixes share one server without touching each other: each has its
// own streams and buckets, an event of one is not in the other's stream,
// and a prefix whose names collide with another's (case) is a clear error.
func TestTwoPrefixesOneServer(t *testing.T) {
	e, def := embedded(t)
	connect := func(prefix string) *Conn {
		c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Prefix: prefix}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	alpha, beta := connect("alpha"), connect("beta")
	for _, c := range []*Conn{alpha, beta} {
		if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
			t.Fatalf("%s: %v", c.Prefix(), err)
		}
	}
	for _, c := range []*Conn{def, alpha, beta} {
		n := c.Names()
		for _, name := range []string{n.Events, n.Tasks, n.Results} {
			s, err := c.JetStream().Stream(t.Context(), name)
			if err != nil {
				t.Fatalf("%s: stream %s: %v", c.Prefix(), name, err)
			}
			if subj := s.CachedInfo().Config.Subjects; len(subj) != 1 || subj[0][:len(c.Prefix())+1] != c.Prefix()+"." {
				t.Errorf("%s: stream %s has subjects %v", c.Prefix(), name, subj)
			}
		}
		if _, err := c.JetStream().KeyValue(t.Context(), n.Nodes); err != nil {
			t.Errorf("%s: bucket %s: %v", c.Prefix(), n.Nodes, err)
		}
		if _, err := c.JetStream().ObjectStore(t.Context(), n.Artifacts); err != nil {
			t.Errorf("%s: object store %s: %v", c.Prefix(), n.Artifacts, err)
		}
	}
	if def.Names().Events != EventsStream || def.Names().Nodes != NodesBucket || def.Names().Artifacts != ArtifactsBucket {
		t.Errorf("the default prefix's names changed: %+v", def.Names())
	}
	if _, err := alpha.JetStream().Publish(t.Context(), EventSubject("alpha", "r1", "root", "run.started"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	for c, want := range map[*Conn]uint64{alpha: 1, beta: 0, def: 0} {
		s, err := c.JetStream().Stream(t.Context(), c.Names().Events)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != want {
			t.Errorf("%s's events stream holds %d messages, want %d", c.Prefix(), info.State.Msgs, want)
		}
	}
	if err := connect("ALPHA").EnsureStreams(t.Context(), StreamLimits{}); !errors.Is(err, ErrStreamMismatch) {
		t.Errorf("a prefix whose streams another prefix holds: %v", err)
	}
	if _, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Prefix: "a/b"}, zerolog.Nop()); err == nil {
		t.Error("a prefix that cannot name a stream was accepted")
	}
}
