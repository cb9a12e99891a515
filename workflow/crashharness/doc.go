// Package crashharness kills a workflow process at every journal point and
// checks that rerunning it converges on the state an uninterrupted run
// leaves. It exists only in test builds (-tags crashtest), which also compile
// the failpoints of package journal/safefile; the shipped binary has neither.
//
// The process under test is any command (usually the test binary re-executed
// into a helper test, or the installer binary) that runs a workflow in a
// sandbox directory. The harness:
//
//  1. runs it once uninterrupted, with OAC_CRASH_COUNT naming a file that
//     records every failpoint passed, and snapshots the sandbox;
//  2. for every N from 1 to the number of points, runs it in a fresh
//     sandbox with OAC_CRASH_AT=N, so it SIGKILLs itself at the N-th point
//     (before a write, between write and fsync, after the fsync of every
//     journal record and atomic file write);
//  3. reruns it without a crash point. Where the journal left by the crash
//     needs inspection (an interrupted Inspect step), the rerun must refuse
//     and change nothing; otherwise it must succeed and the sandbox must equal
//     the uninterrupted run's, file by file, with contents and modes, and the
//     journal's outcome must be the same.
package crashharness
