package testenv

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// OpenPTY opens a pseudo-terminal pair, for tests of what a command does
// on a terminal (confirmation prompts): give the child the terminal as
// stdin, and read or write the controlling side.
func OpenPTY() (control, terminal *os.File, err error) {
	control, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			_ = control.Close()
		}
	}()
	var n uint32
	if err := ioctl(control.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, nil, fmt.Errorf("TIOCGPTN: %w", err)
	}
	var unlock int32
	if err := ioctl(control.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		return nil, nil, fmt.Errorf("TIOCSPTLCK: %w", err)
	}
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	return control, terminal, nil
}

func ioctl(fd, req, arg uintptr) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, req, arg); errno != 0 {
		return errno
	}
	return nil
}

// SetPTYSize gives a pseudo-terminal a window size, as a terminal emulator
// does; a new one has none (0×0), and progress displays draw nothing on it.
func SetPTYSize(terminal *os.File, rows, cols uint16) error {
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	return ioctl(terminal.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws)))
}
