// Package exit holds the seam command's exit codes and the error that
// carries one, so every command answers scripts the same way.
package exit

import (
	"errors"
	"fmt"
)

// The exit codes, the same for every subcommand.
const (
	// OK means the command did what was asked and the answer is yes.
	OK = 0
	// Failed means the answer is "no": a breaking change, a blocked batch,
	// a failed validation.
	Failed = 1
	// Usage means the command could not run: bad flags or arguments, or no
	// connection to Seam.
	Usage = 2
)

// Error is an error with the exit code it ends the command with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Failf returns an error that exits Failed: the command worked and the
// answer is no.
func Failf(format string, a ...any) error {
	return &Error{Code: Failed, Err: fmt.Errorf(format, a...)}
}

// Usagef returns an error that exits Usage.
func Usagef(format string, a ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, a...)}
}

// Coded reports whether err already carries an exit code.
func Coded(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// CodeOf returns the exit code err ends the command with: its own, or
// Usage for any error that stopped a command before it had an answer.
func CodeOf(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Usage
}
