package client

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seamdata/seam/cmd/seam/internal/exit"
	"github.com/seamdata/seam/core/contract"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
)

// ReadInput reads a file, or standard input for "-".
func ReadInput(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "" {
		return nil, exit.Usagef("give the file with -f (or -f - for standard input)")
	}
	if path == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, exit.Usagef("%w", err)
	}
	return data, nil
}

// OpenFile opens a file a command reads as it goes (a large data file)
// and returns it with its size and mode; a file that cannot be read is a
// usage error.
func OpenFile(path string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, exit.Usagef("%w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, exit.Usagef("%w", err)
	}
	return f, info, nil
}

// ReadContract reads a contract file (a proposed version), or standard
// input for "-"; a file that is not a valid contract exits exit.Invalid.
func ReadContract(cmd *cobra.Command, path string) (*contractv1.Contract, error) {
	data, err := ReadInput(cmd, path)
	if err != nil {
		return nil, err
	}
	c, err := contract.Load(data, path)
	if err != nil {
		return nil, exit.Invalidf("%w", err)
	}
	return c, nil
}

// FileFormat picks a data file's format from --format, or else from its
// extension (.ndjson, .jsonl, .csv, .json).
func FileFormat(path, flag string) (recordv1.Format, error) {
	name := strings.ToLower(flag)
	if name == "" {
		name = strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	}
	switch name {
	case "ndjson", "jsonl":
		return recordv1.Format_FORMAT_NDJSON, nil
	case "csv":
		return recordv1.Format_FORMAT_CSV, nil
	case "json":
		return recordv1.Format_FORMAT_JSON, nil
	}
	if flag == "" {
		return 0, exit.Usagef("cannot tell the format of %s from its extension; pass --format ndjson, csv or json", path)
	}
	return 0, exit.Usagef("--format %q: use ndjson, csv or json", flag)
}

// Subject returns the subject a command names: its argument, or
// --subject; both work, and they must agree when both are given.
func Subject(arg []string, flag string) (string, error) {
	return argOrFlag("subject", "--subject", arg, flag)
}

// File returns the file a command reads: its argument, or -f; both work,
// and they must agree when both are given.
func File(arg []string, flag string) (string, error) {
	return argOrFlag("file", "-f", arg, flag)
}

// ReadFile reads the file a command names (File) and returns its path and
// contents (ReadInput).
func ReadFile(cmd *cobra.Command, arg []string, flag string) (path string, data []byte, err error) {
	if path, err = File(arg, flag); err != nil {
		return "", nil, err
	}
	data, err = ReadInput(cmd, path)
	return path, data, err
}

// ReadDocument reads the document a command sends (ReadFile) and decodes
// it; a document that does not decode is invalid input (exit.Invalid).
func ReadDocument[T any](cmd *cobra.Command, arg []string, flag string, decode func(data []byte, path string) (T, error)) (T, error) {
	path, data, err := ReadFile(cmd, arg, flag)
	if err != nil {
		var zero T
		return zero, err
	}
	doc, err := decode(data, path)
	if err != nil {
		return doc, exit.Invalidf("%w", err)
	}
	return doc, nil
}

func argOrFlag(what, flagName string, arg []string, flag string) (string, error) {
	switch {
	case len(arg) == 0:
		return flag, nil
	case flag != "" && flag != arg[0]:
		return "", exit.Usagef("the %s is %q as an argument and %q as %s; give it once", what, arg[0], flag, flagName)
	}
	return arg[0], nil
}
