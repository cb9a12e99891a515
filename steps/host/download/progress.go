package download

// ProgressThreshold is the size from which a download's progress is worth
// printing (CONTRACT §4.5: 10% steps for files of 50 MiB or more).
const ProgressThreshold = 50 << 20

// TenPercentSteps returns a Request.Progress function that calls report
// with 10, 20, ... 100 as a download of a file of at least
// ProgressThreshold bytes crosses each step, once per step and never going
// back (a resumed download starts at the step it already holds). For
// smaller files it returns nil: nothing is printed.
func TenPercentSteps(size int64, report func(percent int)) func(done, total int64) {
	if size < ProgressThreshold || report == nil {
		return nil
	}
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		step := int(done * 10 / total)
		if last < 0 {
			// The first call tells what an earlier run kept.
			last = step
			if step == 0 {
				return
			}
		} else if step <= last {
			return
		}
		last = step
		report(step * 10)
	}
}

// PercentChanges returns a Request.Progress function that passes a call on
// to report only when it tells something new at percent resolution: the
// first call (what an earlier run kept), each change of the whole percent,
// and completion. A sender that crosses a process boundary (the
// service-account child) sends at most about a hundred messages a file.
func PercentChanges(report func(done, total int64)) func(done, total int64) {
	last := int64(-1)
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		// 100 only when done == total: completion is always a change.
		pct := done * 100 / total
		if pct == last {
			return
		}
		last = pct
		report(done, total)
	}
}
