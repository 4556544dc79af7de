package testenv

import (
	"os"
	"strings"
)

// ReadPTY reads what a pseudo-terminal's control side gets until it is
// closed (or a read deadline passes) and then sends it, whole.
func ReadPTY(control *os.File) <-chan string {
	read := make(chan string, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := control.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		read <- b.String()
	}()
	return read
}
