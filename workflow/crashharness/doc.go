// Package crashharness kills a workflow process at every journal point and
// checks that rerunning it converges on the state an uninterrupted run
// leaves. It is test support only, imported by tests; the shipped binary
// never holds it. Run, the harness for a process in a sandbox directory,
// exists only in test builds with -tags crashtest, which also compile the
// failpoints of package journal/safefile.
//
// The parts any crash test shares are in every build, for tests that drive
// a crashtest build of their own (the command's end-to-end crash tests in
// a test host): CountTo and CrashAt are the environment a crashtest build
// reads; Points reads the failpoints an uninterrupted run passed and
// places each in its workflow step by the journal's records; Sample picks
// the points a test runs (every k-th, every point of some states, a cap,
// overridden by OAC_E2E_CRASH_EVERY, _MAX, _POINTS and _PART); Tally runs
// each point as the subtest point-NNN, counts what the reruns did and
// times the points' phases.
//
// Run's process under test is any command (the test binary re-executed into a
// helper test, or the installer binary built with -tags crashtest) that runs
// a workflow in a sandbox directory. The harness:
//
//  1. runs it once uninterrupted, with OAC_CRASH_COUNT naming a file that
//     records every failpoint passed, and snapshots the sandbox;
//  2. for every N from 1 to the number of points, runs it in a fresh
//     sandbox with OAC_CRASH_AT=N, so it SIGKILLs itself at the N-th point
//     (before a write, between write and fsync, after the fsync of every
//     journal record and atomic file write);
//  3. reruns it without a crash point. Where the crash left one of the
//     target's Inspect states interrupted, the rerun must refuse and change
//     nothing; anywhere else it must succeed, the sandbox must equal the
//     uninterrupted run's, file by file, with contents and modes (package
//     treetest's snapshot), and the
//     journal's outcome must be the same.
//
// In PowerCut mode every sandbox is a power-cut file system (package
// journal/powercut): after each SIGKILL the harness cuts power, so what the
// process did not make durable is gone before the rerun, and a missing fsync
// fails the test. A completed run is cut once more and must lose nothing.
// With Recrash, the rerun of each crash that left a step interrupted is
// itself killed at each of its points until it has recovered that step,
// and a third run must converge the same way.
package crashharness
