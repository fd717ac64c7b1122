package s3gw

import "syscall"

// childSysProcAttr asks Linux to send the child SIGTERM when this process
// dies, as a second line behind the stdin pipe closing.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
