// Package imagetest builds fixture Runtime image archives for tests, the
// development console and the benchmarks: tiny real images with true
// digests, in the form `docker save` writes, that docker load accepts.
//
// WriteFixture writes runtime.tar and runtime.tar.gz and reports what a
// release manifest says about them; BuildArchive streams the archive
// alone. Image and its Entries let a test alter any part of an archive
// (a record, a descriptor, a blob) and still write a self-consistent one,
// to see what package image refuses. Nothing here is in the installer's
// binary.
package imagetest
