package messages

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Rate-limit operations, the last token of <prefix>.rate.v<protocol>.<op>
// (see docs/wire.md, "Provider rate limits").
const (
	RateOpLease  = "lease"  // request/reply: a process's shares of a key
	RateOpReport = "report" // request/reply: a 429/529/503 or learned limits
	RateOpFrozen = "frozen" // the owner's notice to every process: a key is frozen
)

// RateKey names one provider quota: the endpoint's host, a fingerprint
// of the API key (never the key: a truncated SHA-256, "none" without a
// key) and the model.
type RateKey struct {
	Host    string `json:"host"`
	Account string `json:"account"`
	Model   string `json:"model"`
}

// String is the key as one string, host|account|model.
func (k RateKey) String() string { return k.Host + "|" + k.Account + "|" + k.Model }

// Validate checks that every part is set, printable and short.
func (k RateKey) Validate() error {
	for _, p := range []struct{ name, v string }{{"host", k.Host}, {"account", k.Account}, {"model", k.Model}} {
		if p.v == "" || len(p.v) > 256 || !utf8.ValidString(p.v) || strings.ContainsAny(p.v, "|\x00\n\r") || !PrintableID(p.v) {
			return fmt.Errorf("%w: rate key: %s %q must be 1-256 printable characters without |", ErrBadMessage, p.name, p.v)
		}
	}
	return nil
}

// RateLimits are a quota's limits per minute; 0 is unknown (no limit).
type RateLimits struct {
	RPM int64 `json:"rpm,omitempty"`
	TPM int64 `json:"tpm,omitempty"`
}

func (l RateLimits) validate() error {
	if l.RPM < 0 || l.TPM < 0 || l.RPM > 1e12 || l.TPM > 1e15 {
		return fmt.Errorf("%w: rate limits must be 0 or positive, got rpm %d tpm %d", ErrBadMessage, l.RPM, l.TPM)
	}
	return nil
}

// RateDemand is what one process wants of a key for one run: Waiting
// calls wait now, the shallowest of them at Depth (0: the root), and the
// first of them needs NeedTokens; Starved says the process has nothing
// left of its share for them.
type RateDemand struct {
	Run        string `json:"run"`
	Priority   int    `json:"priority,omitempty"`
	Waiting    int    `json:"waiting"`
	Depth      int    `json:"depth"`
	NeedTokens int64  `json:"need_tokens,omitempty"`
	Starved    bool   `json:"starved,omitempty"`
}

// RateLeaseRequest asks the key's owner for this process's shares: every
// run it serves with calls waiting (a run with none gives its share back).
// Limits are the process's configured limits (model.rate_limit); Learned
// the ones its answers' headers gave.
type RateLeaseRequest struct {
	V       int          `json:"v"`
	Key     RateKey      `json:"key"`
	Client  string       `json:"client"`
	Limits  RateLimits   `json:"limits,omitzero"`
	Learned RateLimits   `json:"learned,omitzero"`
	Demand  []RateDemand `json:"demand,omitempty"`
}

// maxRateDemands bounds the runs one lease request may name.
const maxRateDemands = 1024

// Validate checks a lease request.
func (r *RateLeaseRequest) Validate() error {
	if err := checkVersion("rate lease", r.V); err != nil {
		return err
	}
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if err := checkID("client", r.Client); err != nil {
		return err
	}
	if err := r.Limits.validate(); err != nil {
		return err
	}
	if err := r.Learned.validate(); err != nil {
		return err
	}
	if len(r.Demand) > maxRateDemands {
		return fmt.Errorf("%w: rate lease: %d runs, at most %d", ErrBadMessage, len(r.Demand), maxRateDemands)
	}
	for _, d := range r.Demand {
		if err := checkID("run", d.Run); err != nil {
			return err
		}
		if d.Waiting < 0 || d.Depth < 0 || d.NeedTokens < 0 || d.Priority < 0 || d.Priority > 1000 || d.Waiting > 1e6 || d.Depth > 1000 {
			return fmt.Errorf("%w: rate lease: run %s: waiting, depth, need_tokens and priority (at most 1000) must be 0 or positive", ErrBadMessage, d.Run)
		}
	}
	return nil
}

// RateShare is a run's share of a key in one process: RPS requests and
// TPS tokens a second for the lease's time, and Burst requests (with
// BurstTokens) it may send at once.
type RateShare struct {
	Run         string  `json:"run"`
	RPS         float64 `json:"rps"`
	TPS         float64 `json:"tps,omitempty"`
	Burst       int     `json:"burst,omitempty"`
	BurstTokens int64   `json:"burst_tokens,omitempty"`
}

// RateLeaseReply answers a lease: the shares (valid TTLMS milliseconds),
// the key's effective limits (none known: no shares, the process does not
// pace) and, while the key is frozen, FrozenMS milliseconds left.
type RateLeaseReply struct {
	V        int         `json:"v"`
	Shares   []RateShare `json:"shares,omitempty"`
	Limits   RateLimits  `json:"limits,omitzero"`
	TTLMS    int64       `json:"ttl_ms"`
	FrozenMS int64       `json:"frozen_ms,omitempty"`
	Error    *Error      `json:"error,omitempty"`
}

// Validate checks a lease reply.
func (r *RateLeaseReply) Validate() error {
	if err := checkVersion("rate lease reply", r.V); err != nil {
		return err
	}
	if r.TTLMS < 0 || r.FrozenMS < 0 || r.TTLMS > 3_600_000 || r.FrozenMS > 3_600_000 {
		return fmt.Errorf("%w: rate lease reply: ttl_ms and frozen_ms must be 0 to an hour", ErrBadMessage)
	}
	if err := r.Limits.validate(); err != nil {
		return err
	}
	for _, s := range r.Shares {
		if err := checkID("run", s.Run); err != nil {
			return err
		}
		if !finite(s.RPS) || !finite(s.TPS) || s.RPS < 0 || s.TPS < 0 || s.Burst < 0 || s.BurstTokens < 0 {
			return fmt.Errorf("%w: rate lease reply: run %s: shares must be finite and 0 or positive", ErrBadMessage, s.Run)
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// RateReport tells the key's owner what a provider said: Status 429, 529
// or 503 (RetryAfterMS as asked, 0 if not) freezes the key for every
// process; Learned carries limits read from headers.
type RateReport struct {
	V            int        `json:"v"`
	Key          RateKey    `json:"key"`
	Client       string     `json:"client"`
	Status       int        `json:"status,omitempty"`
	RetryAfterMS int64      `json:"retry_after_ms,omitempty"`
	Learned      RateLimits `json:"learned,omitzero"`
}

// Validate checks a report.
func (r *RateReport) Validate() error {
	if err := checkVersion("rate report", r.V); err != nil {
		return err
	}
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if err := checkID("client", r.Client); err != nil {
		return err
	}
	if r.Status != 0 && r.Status != 429 && r.Status != 529 && r.Status != 503 {
		return fmt.Errorf("%w: rate report: status %d: only 429, 529 and 503 freeze a key", ErrBadMessage, r.Status)
	}
	if r.RetryAfterMS < 0 || r.RetryAfterMS > 3_600_000 {
		return fmt.Errorf("%w: rate report: retry_after_ms must be 0 to an hour", ErrBadMessage)
	}
	return r.Learned.validate()
}

// RateFrozen is the owner's notice that a key is frozen for ForMS
// milliseconds from now (a provider answered Status).
type RateFrozen struct {
	V      int     `json:"v"`
	Key    RateKey `json:"key"`
	ForMS  int64   `json:"for_ms"`
	Status int     `json:"status"`
}

// Validate checks a notice.
func (r *RateFrozen) Validate() error {
	if err := checkVersion("rate frozen", r.V); err != nil {
		return err
	}
	if r.ForMS <= 0 || r.ForMS > 3_600_000 {
		return fmt.Errorf("%w: rate frozen: for_ms must be 1 to an hour", ErrBadMessage)
	}
	return r.Key.Validate()
}
