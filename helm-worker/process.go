package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// startProcess runs the call as a helm process (this binary in plain mode), writing straight
// to the call's fd 1 and 2: for calls whose environment the worker cannot honour in-process.
func (c *call) startProcess(argv []string, env map[string]string, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, argv...)
	cmd.Dir = dir
	cmd.Env = make([]string, 0, len(env))
	for k, v := range env {
		// Without arguments this binary would read these as "be a worker/engine"; helm would not.
		if (k == workerEnv || k == engineEnv) && len(argv) == 0 {
			continue
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	c.childMu.Lock()
	c.child = cmd.Process
	c.childMu.Unlock()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			code = 1
		}
		c.done <- callResult{exitCode: code}
	}()
	return nil
}
