package safefile

import (
	"errors"
	"os"
)

// Exists reports whether p names anything: a file, a directory or a
// symbolic link, which it does not follow (a dangling link counts). A
// missing p is (false, nil); any other failure to look is returned. Under
// a Root, use Root.Exists.
func Exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	return lstatExists(err)
}

// lstatExists is Exists' answer for the error of an lstat.
func lstatExists(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, err
}
