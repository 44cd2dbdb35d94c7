package workspace

// A node's checkout may be shallow (git clone --depth 1): its history
// stops at the commits its shallow file lists, whose parents it lacks.
// A store borrowing its objects must know where that history stops, or
// git, walking a thin bundle's prerequisite (the snapshot's base), looks
// for parents that are not there and refuses the bundle ("Failed to
// traverse parents"). The store's home mirrors the checkout's shallow
// file (commit IDs: nothing in it runs), refreshed before each unbundle,
// since the user may deepen or fetch meanwhile.

// mirrorShallow copies the borrowed checkout's shallow file into the
// store's home (removing the copy when the checkout is no longer
// shallow); nothing for a store that borrows nothing, or a workspace.
func (r *Repo) mirrorShallow() error {
	if r.shallowOf == "" {
		return nil
	}
	return r.home.mirrorOf(r.shallowOf, []string{"shallow"})
}
