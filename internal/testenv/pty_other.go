//go:build !linux

package testenv

import (
	"errors"
	"os"
)

// OpenPTY is only implemented on Linux.
func OpenPTY() (control, terminal *os.File, err error) {
	return nil, nil, errors.New("OpenPTY: not implemented on this system")
}

// SetPTYSize is only implemented on Linux.
func SetPTYSize(terminal *os.File, rows, cols uint16) error {
	return errors.New("SetPTYSize: not implemented on this system")
}
