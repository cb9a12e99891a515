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
