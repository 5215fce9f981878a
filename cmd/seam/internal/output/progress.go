package output

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress returns a byte progress bar with rate and ETA on w, or a
// silent one when w is not a terminal (so scripts and CI logs stay clean).
func Progress(w io.Writer, total int64, what string) *progressbar.ProgressBar {
	if !Terminal(w) {
		return progressbar.DefaultBytesSilent(total, what)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		progressbar.OptionFullWidth(),
	)
}

// Terminal reports whether w is a terminal: progress for people goes
// there, and stays out of scripts' and CI logs' output.
func Terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
