package bus

import (
	"errors"
	"testing"
)

func TestParseResultSubject(t *testing.T) {
	for _, c := range []struct {
		subject, run, agent, tag string
		bad                      bool
	}{
		{subject: ResultSubject("troupe", "r1", "explore-1", "00ff"), run: "r1", agent: "explore-1", tag: "00ff"},
		{subject: "troupe.result.r1.explore-1", run: "r1", agent: "explore-1"}, // legacy: no tag
		{subject: "troupe.result.r1", bad: true},
		{subject: "troupe.result.r1.a.b.c", bad: true},
		{subject: "troupe.result.r1..t", bad: true},
		{subject: "troupe.result.r1.a.", bad: true},
		{subject: "other.result.r1.a.t", bad: true},
		{subject: "troupe.evt.r1.a.t", bad: true},
		{subject: "troupe.result.r1.a.*", bad: true},
		{subject: "troupe.result.r1.a.>", bad: true},
	} {
		run, agent, tag, err := ParseResultSubject("troupe", c.subject)
		if c.bad {
			if !errors.Is(err, ErrNotResultSubject) {
				t.Errorf("%q: got %q %q %q %v, want ErrNotResultSubject", c.subject, run, agent, tag, err)
			}
			continue
		}
		if err != nil || run != c.run || agent != c.agent || tag != c.tag {
			t.Errorf("%q: got %q %q %q %v", c.subject, run, agent, tag, err)
		}
	}
}
