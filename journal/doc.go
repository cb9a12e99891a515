// Package journal is the installer's durable storage.
//
// It holds a framed append-only journal (journal.go): one file per workflow
// instance, a sequence of records, each made durable (fdatasync) before
// Append returns. The engine in package workflow writes the intent of a
// step before its first side effect and the outcome after it, the way
// etcd's WAL does.
//
// Opening files safely, atomic and write-once publication, streamed files
// committed by rename, locks and the crash failpoints are the safe-file
// layer, package safefile.
//
// Installer bookkeeping (what the installer created on the host) lives in
// bbolt, in the subpackage bookkeeping.
//
// # Record framing
//
// Every record is one frame, written with a single write(2):
//
//	+----------------+----------------+----------------+----------------+
//	| length (u32le) | hcrc (u32le)   | pcrc (u32le)   | payload ...    |
//	+----------------+----------------+----------------+----------------+
//
// hcrc is the CRC32C (Castagnoli) of the four length bytes, pcrc the CRC32C
// of the payload. The header checksum lets a reader tell a torn tail from a
// corrupted length field: a crash mid-append leaves a prefix of the last
// frame (an incomplete header, or a valid header with a short payload), or
// after a power loss a zero-filled tail or a last frame whose payload fails
// its checksum, while a flipped byte in an earlier frame fails its checksum
// with complete frames after it. A last frame with a bad header checksum
// that is not all zeros is corruption: its length cannot be trusted.
//
// Opening a journal reads every record and changes nothing: a torn final
// frame is reported, and a bad frame anywhere before the tail is corruption
// and refuses, naming the file and the offset. The writer decides from the
// records whether to write at all; before its first append it repairs the
// torn tail: a copy of the original file is kept beside it as <name>.broken,
// replacing the copy of any earlier cut (at most one copy exists: a torn
// frame is a record never acknowledged, so only the latest is worth a
// look), the journal is cut at the torn frame, and the cut is reported.
// LastCut reads the copy back for status.
package journal
