package sopsfile

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/google/shlex"
)

// KeyCommandArg is the hidden first argument under which the plugin runs
// a key command for sops (BoundKeyCommands): never typed by a user.
const KeyCommandArg = "__sops-key-command"

// keyCommandEnvs are the variables sops runs a command of to get a key.
var keyCommandEnvs = []string{"SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_CMD"}

// TimedOutExit is the exit code of a key command stopped at its time
// limit (timeout(1)'s).
const TimedOutExit = 124

// BoundKeyCommands makes sops run each key command of this process's
// environment (SOPS_AGE_KEY_CMD, SOPS_AGE_SSH_PRIVATE_KEY_CMD) under
// self, the plugin's own executable, which runs it in a process group of
// its own and stops the whole group after timeout: sops runs the command
// without a deadline, and a command that hangs (a password prompt with
// no terminal, a vault that does not answer) would otherwise outlive the
// run. Call it once, before anything is decrypted.
func BoundKeyCommands(self string, timeout time.Duration) {
	for _, env := range keyCommandEnvs {
		cmd, ok := os.LookupEnv(env)
		if !ok || strings.Contains(cmd, KeyCommandArg) || self == "" {
			continue
		}
		// sops splits the variable as a shell would (shlex): the command
		// travels as one base64 word, the executable's path quoted.
		wrapped := fmt.Sprintf("'%s' %s %s %s %s", strings.ReplaceAll(self, "'", ""), KeyCommandArg, env, timeout, base64.StdEncoding.EncodeToString([]byte(cmd)))
		_ = os.Setenv(env, wrapped)
	}
}

// RunKeyCommand is the plugin run under KeyCommandArg: args are the
// variable's name, the time limit and the command in base64. It runs the
// command with this process's standard streams and environment (sops
// adds SOPS_AGE_RECIPIENT), and stops its process group at the limit,
// saying so and exiting TimedOutExit.
func RunKeyCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintf(stderr, "%s: want VARIABLE TIMEOUT COMMAND\n", KeyCommandArg)
		return 2
	}
	env, limit, encoded := args[0], args[1], args[2]
	timeout, err := time.ParseDuration(limit)
	raw, derr := base64.StdEncoding.DecodeString(encoded)
	if err != nil || derr != nil {
		fmt.Fprintf(stderr, "%s: bad arguments\n", KeyCommandArg)
		return 2
	}
	words, err := shlex.Split(string(raw))
	if err != nil || len(words) == 0 {
		fmt.Fprintf(stderr, "%s: cannot split %s: %v\n", env, env, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", env, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			return 1
		}
		return 0
	case <-ctx.Done():
		stopGroup(cmd)
		<-done
		fmt.Fprintf(stderr, "%s did not finish in %s: stopped, with every process it started\n", env, timeout)
		return TimedOutExit
	}
}

// wrappedCommand is how sops quotes a key command run under
// BoundKeyCommands in its error: "failed to execute command 'self'
// __sops-key-command VAR LIMIT BASE64: exit status N".
var wrappedCommand = regexp.MustCompile(`failed to execute command '[^']*' ` + KeyCommandArg + ` (\S+) (\S+) (\S+): exit status (\d+)`)

// explainKeyCommands rewrites what sops said of a key command run under
// BoundKeyCommands as the user wrote it: a timeout as a timeout, any
// other failure with the command itself.
func explainKeyCommands(tried string) (string, bool) {
	timedOut := false
	out := wrappedCommand.ReplaceAllStringFunc(tried, func(s string) string {
		m := wrappedCommand.FindStringSubmatch(s)
		if m[4] == fmt.Sprint(TimedOutExit) {
			timedOut = true
			return fmt.Sprintf("the key command %s timed out after %s and was stopped", m[1], m[2])
		}
		raw, _ := base64.StdEncoding.DecodeString(m[3])
		return fmt.Sprintf("the key command %s (%s) failed: exit status %s", m[1], raw, m[4])
	})
	return out, timedOut
}
