package kubectletcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
)

// rotateCAReport is what `rotate-ca` prints with -o json|yaml.
type rotateCAReport struct {
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
	// RequestedAt is the annotation's value; Started: the operator started that rotation;
	// Done: it ended (no step under way, no member outdated).
	RequestedAt string                     `json:"requestedAt"`
	Started     bool                       `json:"started"`
	Done        bool                       `json:"done"`
	Step        etcdv1beta2.CARotationStep `json:"step,omitempty"`
	TrustedCAs  []string                   `json:"trustedCAs,omitempty"`
}

// rotateCA asks the etcd operator for a new CA of a TLS.auto cluster, `kubectl etcd rotate-ca
// <cluster>`: it writes the annotation etcd.database.coreos.com/rotate-ca with the current time
// (a merge patch) and follows status.TLS through the rotation's steps until it ends. Exit 0 once
// done (at once with --wait=false); 1 when --timeout passed first (the rotation goes on) or the
// annotation was changed by someone else. A cluster without TLS.auto, or whose CA is
// cert-manager's (issuerRef), is refused before anything is written.
func (a *App) rotateCA(ctx context.Context, args []string) error {
	fs := a.flagSet("rotate-ca")
	wait := fs.Bool("wait", true, "follow the rotation to its end; --wait=false requests it and returns")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to follow the rotation (it goes on after)")
	output := outputFlag(fs)
	pos, err := a.parse(fs, args, 1, "rotate-ca <cluster>")
	if err != nil {
		return err
	}
	if err := a.checkOutput("rotate-ca", *output); err != nil {
		return err
	}
	c, r, err := a.connect(ctx, pos[0])
	if err != nil {
		return err
	}
	cl := r.cluster
	switch tls := cl.Spec.TLS; {
	case tls == nil || tls.Auto == nil:
		return fmt.Errorf("EtcdCluster %s/%s has no TLS.auto: its certificates are not the operator's to rotate", cl.Namespace, cl.Name)
	case tls.Auto.IssuerRef != nil:
		return fmt.Errorf("EtcdCluster %s/%s takes its certificates from cert-manager (issuerRef %s): rotate the issuer's CA, and the operator follows it (status.TLS.caRotation)",
			cl.Namespace, cl.Name, tls.Auto.IssuerRef.Name)
	}
	progress := a.progress(*output)
	value := a.Now().UTC().Format(time.RFC3339Nano)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{etcdv1beta2.AnnotationRotateCA: value}}})
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	if err := c.Patch(ctx, cl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating EtcdCluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	fmt.Fprintf(progress, "CA rotation requested: %s=%s on etcdcluster %s/%s\n", etcdv1beta2.AnnotationRotateCA, value, cl.Namespace, cl.Name)
	rep := &rotateCAReport{Namespace: cl.Namespace, Cluster: cl.Name, RequestedAt: value}
	var followErr error
	if *wait {
		followErr = a.followRotation(ctx, c, cl, rep, *timeout, progress)
	}
	if *output != "" {
		return firstErr(writeObject(a.Out, *output, rep), followErr)
	}
	if !*wait {
		fmt.Fprintf(a.Out, "follow it with: kubectl get etcd %s -n %s -o jsonpath='{.status.TLS}'\n", cl.Name, cl.Namespace)
	}
	return followErr
}

// followRotation polls the cluster until the rotation requested with rep.RequestedAt ended or
// timeout passed, printing each step to w.
func (a *App) followRotation(ctx context.Context, c client.Reader, cl *etcdv1beta2.EtcdCluster, rep *rotateCAReport, timeout time.Duration, w io.Writer) error {
	key := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	last, lastMsg := etcdv1beta2.CARotationStep("-"), ""
	for {
		if err := c.Get(ctx, key, cl); err != nil {
			return fmt.Errorf("following EtcdCluster %s: %w", key, err)
		}
		if v := cl.Annotations[etcdv1beta2.AnnotationRotateCA]; v != rep.RequestedAt {
			fmt.Fprintf(w, "the annotation was changed to %q by someone else: this request was replaced or withdrawn\n", v)
			return errOutcome
		}
		if st := cl.Status.TLS; st != nil && st.LastCARotationRequest == rep.RequestedAt {
			rep.Started, rep.Step, rep.TrustedCAs = true, st.CARotation, st.TrustedCAs
			if st.CARotation != last {
				switch st.CARotation {
				case etcdv1beta2.CARotationTrusting:
					fmt.Fprintf(w, "Trusting: every CA file holds the old and the new CA; the members are rolled one at a time to load both\n")
				case etcdv1beta2.CARotationIssuing:
					fmt.Fprintf(w, "Issuing: every member accepts the new CA; the certificates are issued under it\n")
				case etcdv1beta2.CARotationRetiring:
					fmt.Fprintf(w, "Retiring: the old CA leaves the CA files once every member serves the new certificates\n")
				case "":
					fmt.Fprintf(w, "the old CA left the CA files; the members are rolled once more to drop it\n")
				}
				last = st.CARotation
			}
			if st.Message != "" && st.Message != lastMsg {
				fmt.Fprintf(w, "  waits: %s\n", st.Message)
			}
			lastMsg = st.Message
			if st.CARotation == "" && len(cl.Status.Members.Outdated) == 0 && len(st.TrustedCAs) == 1 {
				rep.Done = true
				fmt.Fprintf(w, "done: every member runs on the new CA alone (sha256:%s)\n", st.TrustedCAs[0])
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("following EtcdCluster %s: %w", key, ctx.Err())
		case <-deadline.C:
			why := "the etcd operator has not started it (is it running, and of a release that knows the annotation? a rotation under way finishes first)"
			if rep.Started {
				why = fmt.Sprintf("the rotation is at %q, %d member(s) outdated", rep.Step, len(cl.Status.Members.Outdated))
			}
			return fmt.Errorf("waiting for the CA rotation of %s: %s after %s; it goes on (kubectl get etcd %s -n %s -o jsonpath='{.status.TLS}')", key, why, timeout, cl.Name, cl.Namespace)
		case <-tick.C:
		}
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
