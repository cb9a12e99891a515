// Package safefiletest is test support for code that writes files: it runs
// a test's work in an unprivileged process, so that what root would be
// allowed anyway (writing into a directory without write permission) is
// tested as root too, instead of skipped.
//
// The parent test calls RunAsNobody naming a child test of the same binary;
// the child test does the work when it finds its environment and otherwise
// skips. Nothing here is part of the shipped binary.
package safefiletest
