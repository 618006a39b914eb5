//go:build !linux

package outside

import "errors"

// LookAt needs Linux's /proc.
func LookAt(pid int) (Look, string, error) {
	return Look{}, "", errors.New("outside: the outside view reads Linux's /proc; not on this system")
}
