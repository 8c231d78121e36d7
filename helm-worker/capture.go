package main

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A call's fd 1 and fd 2: helm, its libraries (klog, slog's handler, cobra's "Error:"), and the
// plugins it starts all write to the process's fd 1 and 2, some through os.Stdout/os.Stderr,
// some through *os.File values captured at init. Pointing the fds themselves at per-call pipes
// catches all of them, children included; os.Stdout/os.Stderr stay the same *os.File (fd 1, 2).
// Between calls both fds point at /dev/null, so a stray write never lands in the protocol
// channel, which uses private duplicates of the original fds (see serve).
type capture struct {
	stdout, stderr pipeReader
}

type pipeReader struct {
	r    *os.File
	buf  bytes.Buffer
	done chan struct{}
	mu   sync.Mutex
}

func (p *pipeReader) start(r *os.File) {
	p.r = r
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		b := make([]byte, 64*1024)
		for {
			n, err := r.Read(b)
			if n > 0 {
				p.mu.Lock()
				p.buf.Write(b[:n])
				p.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
}

// text returns what was read so far.
func (p *pipeReader) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// blockingPipe: os.Pipe's ends are non-blocking, and fd 1 and 2 are used as plain blocking
// files (os.Stdout is not registered with the poller), where a full pipe would turn a write
// into EAGAIN. These pipes block like a helm process's stdout pipe.
func blockingPipe() (r *os.File, w int, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	// The read end alone is non-blocking (O_NONBLOCK belongs to each end's own open file), so
	// os.NewFile makes it pollable and Close interrupts a pending Read.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(fds[0]), "call-pipe"), fds[1], nil
}

func startCapture() (*capture, error) {
	c := &capture{}
	for _, t := range []struct {
		fd int
		p  *pipeReader
	}{{1, &c.stdout}, {2, &c.stderr}} {
		r, w, err := blockingPipe()
		if err != nil {
			return nil, fmt.Errorf("pipe: %w", err)
		}
		// dup3 without O_CLOEXEC: children of the call inherit fd 1/2, as a helm process's do.
		err = unix.Dup3(w, t.fd, 0)
		unix.Close(w)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("dup3 onto fd %d: %w", t.fd, err)
		}
		t.p.start(r)
	}
	return c, nil
}

// finish points fd 1 and 2 back at /dev/null, which closes the pipes' last write ends unless a
// child of the call still holds them; it waits up to `linger` for that child, as a caller of a
// helm process waits for its pipes to close.
func (c *capture) finish(devNull int, linger time.Duration) (stdout, stderr string) {
	_ = unix.Dup3(devNull, 1, 0)
	_ = unix.Dup3(devNull, 2, 0)
	deadline := time.After(linger)
	for _, p := range []*pipeReader{&c.stdout, &c.stderr} {
		select {
		case <-p.done:
		case <-deadline:
		}
	}
	stdout, stderr = c.stdout.text(), c.stderr.text()
	// Closing the read ends ends the readers (a lingering child then gets EPIPE, as it would
	// once a caller stopped reading).
	c.stdout.r.Close()
	c.stderr.r.Close()
	return stdout, stderr
}
