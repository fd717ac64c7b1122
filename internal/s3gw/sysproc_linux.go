package s3gw

import "syscall"

// childSysProcAttr puts the child in a process group of its own, so a
// signal to the parent's group (Ctrl+C in the terminal of `make run`, a
// SIGTERM to the group from a supervisor) reaches only the parent, which
// stops the child last, after the worker has stored the training state it
// holds. Linux sends the child SIGTERM when the parent dies without doing
// so, as a second line behind the stdin pipe closing.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
}
