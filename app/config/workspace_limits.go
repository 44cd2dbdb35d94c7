package config

import (
	"fmt"
	"slices"
	"strconv"
)

// The values in effect of limits whose 0, or another key, stands for
// something else (see wsRule.eff): a workspace file is checked against
// what runs, not against what a key spells.

// agentInt is the value in effect of an agent limit, as its accessor
// gives it (a 0 there is the default).
func agentInt(limit func(Agent) int) func(Config) string {
	return func(c Config) string { return strconv.Itoa(limit(c.Agent)) }
}

// attempts is a model call's attempts in effect: model.max_attempts when
// set, else model.max_retries + 1.
func attempts(c Config) string { return strconv.Itoa(c.Model.Attempts()) }

func mustNumber(v string) float64 {
	f, _ := number(v)
	return f
}

// rateLimitsWiden says how the provider limits in effect after a
// workspace file (model.rate_limit, by model name) are higher than
// before for some model, or "": a model's own entry wins over its role's
// whole, so an entry that sets tpm alone can drop the rpm a role's entry
// set; 0 is no limit.
func rateLimitsWiden(before, after Model) string {
	b, a := before.RateLimits(), after.RateLimits()
	names := make([]string, 0, len(b))
	for m := range b {
		names = append(names, m)
	}
	slices.Sort(names)
	raises := func(was, now int64) bool { return was != 0 && (now == 0 || now > was) }
	for _, m := range names {
		was, now := b[m], a[m]
		switch {
		case raises(was.RPM, now.RPM):
			return fmt.Sprintf("model %s's rpm in effect would be %s, over %d; it may only lower it", m, limitWord(now.RPM), was.RPM)
		case raises(was.TPM, now.TPM):
			return fmt.Sprintf("model %s's tpm in effect would be %s, over %d; it may only lower it", m, limitWord(now.TPM), was.TPM)
		}
	}
	return ""
}

func limitWord(n int64) string {
	if n == 0 {
		return "none"
	}
	return strconv.FormatInt(n, 10)
}
