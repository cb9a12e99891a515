package bookkeeping

import "errors"

// ErrBusy is returned by Open when another process holds the database
// open for longer than the open timeout.
var ErrBusy = errors.New("installer bookkeeping is in use by another process")

// ErrNewer is returned by Open for a database whose schema version is
// newer than this program knows; it is left unchanged.
var ErrNewer = errors.New("installer bookkeeping was written by a newer version")

// ErrNotFound is returned when a record, or the installation a new record
// would belong to, does not exist.
var ErrNotFound = errors.New("not found")

// ErrOwned is returned when a file or network is already recorded for
// another installation; the record is not changed.
var ErrOwned = errors.New("recorded for another installation")

// ErrInUse is returned by DeleteInstallation while files or networks are
// still recorded for the installation: they must be removed (and their
// records with them) first.
var ErrInUse = errors.New("installation still owns recorded files or networks")
