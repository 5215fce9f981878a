package output

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress returns a byte progress bar with rate and ETA on w, or a
// silent one when w is not a terminal (so scripts and CI logs stay clean).
func Progress(w io.Writer, total int64, what string) *progressbar.ProgressBar {
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return progressbar.DefaultBytesSilent(total, what)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionOnCompletion(func() { io.WriteString(w, "\n") }),
		progressbar.OptionFullWidth(),
	)
}
