package tools

// Which calls of a turn run together: a sequential tool waits for the
// sequential call before it; two calls whose scopes overlap, one of them
// mutating, run in the order the model gave; every other pair may run
// at the same time.

// schedule sets each call's dependencies on earlier calls, and marks the
// calls that may run at the same time as another one (neither waits for
// the other, directly or through a chain).
func schedule(ps []*pending) {
	lastSeq := -1
	before := make([][]bool, len(ps)) // before[i][j]: call i waits for call j
	wait := func(i, j int) {
		ps[i].deps = append(ps[i].deps, ps[j].done)
		before[i][j] = true
		for k, w := range before[j] {
			before[i][k] = before[i][k] || w
		}
	}
	for i, p := range ps {
		before[i] = make([]bool, len(ps))
		if p.tool == nil {
			continue
		}
		if p.spec.Parallel == Sequential {
			if lastSeq >= 0 {
				wait(i, lastSeq)
			}
			lastSeq = i
			continue
		}
		for j, q := range ps[:i] {
			if q.tool == nil || q.spec.Parallel == Sequential {
				continue
			}
			mut := p.spec.Mutates() || q.spec.Mutates()
			if mut && overlaps(p.scopes, q.scopes) {
				wait(i, j)
			}
		}
	}
	for i, p := range ps {
		for j := i + 1; j < len(ps) && p.tool != nil; j++ {
			if ps[j].tool != nil && !before[j][i] {
				p.parallel, ps[j].parallel = true, true
			}
		}
	}
}
