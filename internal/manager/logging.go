package manager

import (
	"io"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// SetupLogging makes one structured logger (controller-runtime's zap, configured by the --zap-*
// flags in opts) the logger of the operator and of klog, so that client-go's own messages
// (leader election, watch errors, throttling, reflector warnings) come out in the same format,
// JSON by default, instead of klog's plain text on stderr. klog's lines carry logger "klog".
// out is where log lines go (os.Stderr in the binaries; a buffer in tests).
func SetupLogging(opts *zap.Options, out io.Writer) logr.Logger {
	log := zap.New(zap.UseFlagOptions(opts), zap.WriteTo(out))
	ctrl.SetLogger(log)
	// ContextualLogger: klog.FromContext/klog.Background (newer client-go code) return this logger
	// too, rather than klog's own text logger.
	klog.SetLoggerWithOptions(log.WithName("klog"), klog.ContextualLogger(true))
	return log
}
