package watch

// Late events. The events stream may store an agent's event after later
// ones: one sent on a connection whose server was lost is sent again
// (with its ID) once a new leader is elected, after events that left
// later. A watcher counts the seqs it skipped as missed when it sees a
// later one; when the skipped event comes after all, it is no longer
// missed. So each agent keeps the spans of seqs it is missing, and a late
// event found in one of them is taken off Missed.

// seqSpan is a run of missed seqs, lo to hi inclusive.
type seqSpan struct{ lo, hi uint64 }

// maxSpans bounds the spans kept per agent: past it the oldest span is
// forgotten, and an event of it that comes late stays counted as missed.
const maxSpans = 32

// saw records seq of the agent key: a seq past the latest counts the ones
// skipped as missed; one below it that was missing is missed no more.
func (r *Run) saw(key string, seq uint64) {
	last := r.lastSeq[key]
	switch {
	case seq > last:
		r.miss(key, last+1, seq-1)
		r.lastSeq[key] = seq
	case seq > 0 && r.found(key, seq):
		r.Missed--
	}
}

// miss counts the seqs lo to hi (none when hi < lo) as missed.
func (r *Run) miss(key string, lo, hi uint64) {
	if hi < lo {
		return
	}
	r.Missed += hi - lo + 1
	if r.missing == nil {
		r.missing = map[string][]seqSpan{}
	}
	spans := append(r.missing[key], seqSpan{lo, hi})
	if len(spans) > maxSpans {
		spans = spans[len(spans)-maxSpans:]
	}
	r.missing[key] = spans
}

// found takes seq out of the agent's missing spans, reporting whether it
// was there.
func (r *Run) found(key string, seq uint64) bool {
	spans := r.missing[key]
	for i, s := range spans {
		if seq < s.lo || seq > s.hi {
			continue
		}
		var rest []seqSpan
		if s.lo < seq {
			rest = append(rest, seqSpan{s.lo, seq - 1})
		}
		if seq < s.hi {
			rest = append(rest, seqSpan{seq + 1, s.hi})
		}
		spans = append(spans[:i:i], append(rest, spans[i+1:]...)...)
		if len(spans) == 0 {
			delete(r.missing, key)
		} else {
			r.missing[key] = spans
		}
		return true
	}
	return false
}
