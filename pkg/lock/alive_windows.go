package lock

// alive reports whether a process of this machine runs. On Windows it is
// not asked: a lock there is stale only once it expired.
func alive(int) bool { return true }
