package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Riding out a lost server. In a cluster every stream, bucket and
// consumer has a leader; when the server holding it goes away its
// followers elect another after 4 to 9 seconds of silence (nats-server's
// raft election timeout, which it does not let us set). Meanwhile the
// asset answers nothing: a publish gets "no response from stream", an API
// request times out or says JetStream is temporarily unavailable, and a
// client whose own server went away is reconnecting. None of this is the
// caller's fault, and all of it passes: what matters is retried (with the
// same message ID, so the stream stores a publish once however often it
// is sent).

// Transient reports whether err is one that a lost server, a leader
// election or a reconnect gives for a while, so the same request is worth
// sending again: no responders, a timeout, JetStream temporarily
// unavailable, the connection reconnecting.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout):
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case jsClusterNotAvailable, jsClusterIncomplete, jsExpectedLastSeqNotReady:
			return true
		}
	}
	return false
}

// nats-server's error codes (errors.json) that pass with an election.
const (
	jsClusterNotAvailable     jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	jsClusterIncomplete       jetstream.ErrorCode = 10004 // incomplete results
	jsExpectedLastSeqNotReady jetstream.ErrorCode = 10163 // expected last sequence per subject temporarily unavailable
)

// Retrying. Between tries Await waits retryFirst, doubling up to
// retryMost: an election ends at no telling when, and a retry that waits
// longer adds its wait to the election's (a ceiling of 4 s did, up to 4 s
// per loss of a server; a try a second costs the hub next to nothing).
// Each try has at most tryFor: a request sent on a connection whose
// server was just lost gets no answer, and waiting for it as long as the
// whole wait would make one lost request cost all of it.
const (
	retryFirst = 250 * time.Millisecond
	retryMost  = time.Second
	tryFor     = 10 * time.Second
	// sayEvery is how often a wait that goes on is reported again.
	sayEvery = 10 * time.Second
)

// StartWait bounds how long a process that starts while the server's
// JetStream cannot answer (a cluster forming or electing a leader) waits
// for it before it gives up.
const StartWait = 2 * time.Minute

// Await calls fn until it succeeds, fails with an error that is not
// Transient, or ctx ends (then the last error is returned). Each call
// gets a context bounded by tryFor. The first transient
// failure is logged at warn with what (e.g. "look up stream
// TROUPE_TASKS"), and every sayEvery after while it goes on; a success
// after that is logged too.
func Await(ctx context.Context, log zerolog.Logger, what string, fn func(ctx context.Context) error) error {
	wait := retryFirst
	var said time.Time
	start := time.Now()
	for {
		tctx, cancel := context.WithTimeout(ctx, tryFor)
		err := fn(tctx)
		cancel()
		if err == nil {
			if !said.IsZero() {
				log.Warn().Dur("waited", time.Since(start).Round(time.Millisecond)).Msg(what + ": the server answers again")
			}
			return nil
		}
		if !Transient(err) || ctx.Err() != nil {
			return err
		}
		if time.Since(said) >= sayEvery {
			log.Warn().Err(err).Dur("waited", time.Since(start).Round(time.Millisecond)).
				Msg(what + ": the server cannot answer yet (a server lost, or a leader being elected): retrying")
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMost)
	}
}

// awaitStart is Await bounded by StartWait: what a process needs before it
// can start.
func awaitStart(ctx context.Context, log zerolog.Logger, what string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, StartWait)
	defer cancel()
	return Await(ctx, log, what, fn)
}
