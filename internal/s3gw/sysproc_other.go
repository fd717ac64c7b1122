//go:build !linux

package s3gw

import "syscall"

// childSysProcAttr has nothing to add off Linux: the child stops when its
// stdin pipe closes.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
