package etcdcluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-operator/etcd-operator/internal/member"
	"github.com/etcd-operator/etcd-operator/internal/reason"
	etcdv1beta2 "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1beta2"
	"github.com/etcd-operator/etcd-operator/pkg/cluster"
)

// coreosNodeLabel is the label coreos/etcd-operator puts on its member pods (the member's
// name); this operator's pods carry member.LabelMember instead.
const coreosNodeLabel = "etcd_node"

// minTakeOverVersion is the oldest etcd a coreos cluster may run to be taken over: learners
// (etcd 3.4) and the member promotion and leadership transfer this path relies on behave as
// this operator expects from 3.5 on, the oldest minor release it runs.
const minTakeOverVersion = "3.5.0"

// isCoreosPod reports whether coreos/etcd-operator made p: its label etcd_node, not this
// operator's member label.
func isCoreosPod(p *corev1.Pod) bool {
	_, coreos := p.Labels[coreosNodeLabel]
	_, ours := p.Labels[member.LabelMember]
	return coreos && !ours
}

// takingOver reports whether the user gave the go-ahead to take c over from coreos/etcd-operator.
func takingOver(c *etcdv1beta2.EtcdCluster) bool {
	return c.Annotations[etcdv1beta2.AnnotationTakeOver] == "true"
}

// holdCoreosCluster refuses to act on a cluster whose member pods coreos/etcd-operator made (a
// user replaced the coreos operator's Deployment with this one while its clusters run), unless
// the user asked for the takeover (etcdv1beta2.AnnotationTakeOver) and the cluster is one this
// operator can take over (takeOverRefusal). Those pods carry this operator's selector labels
// and, for the same EtcdCluster object, its controller reference, but their names, flags,
// restart policy and etcd versions are coreos': left to the member logic without the go-ahead,
// they could be taken for strangers, replaced or upgraded. Held, nothing of such a cluster is
// changed; the error says what was found and what the user can do
// (docs/migrating-from-coreos.md). With the go-ahead, cluster.Next replaces the coreos members
// one at a time (nextTakeOver).
func (r *Reconciler) holdCoreosCluster(ctx context.Context, c *etcdv1beta2.EtcdCluster) error {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(member.SelectorLabels(c))); err != nil {
		return fmt.Errorf("listing the pods of %s: %w", klog.KObj(c), err)
	}
	var found []*corev1.Pod
	for i := range pods.Items {
		if isCoreosPod(&pods.Items[i]) {
			found = append(found, &pods.Items[i])
		}
	}
	if len(found) == 0 {
		return nil
	}
	dropCoreosConditions(c)
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	names := make([]string, len(found))
	for i, p := range found {
		names[i] = p.Name
	}
	if !takingOver(c) {
		return setHeld(c, reason.Errorf(etcdv1beta2.ReasonCoreosMembersFound,
			"pods %s were made by coreos/etcd-operator (label %s): this operator changes nothing of cluster %s (no pod, volume, Service or member is touched) until you ask it to take the cluster over in place: annotate it %s=true (etcd 3.5 or newer, no TLS, members without volumes); or keep the coreos operator running for it (docs/migrating-from-coreos.md)",
			strings.Join(names, ", "), coreosNodeLabel, c.Name, etcdv1beta2.AnnotationTakeOver))
	}
	if why := takeOverRefusal(c, found); why != "" {
		return setHeld(c, reason.Errorf(etcdv1beta2.ReasonTakeOverRefused, "cluster %s (coreos members %s) is not taken over: %s; nothing of it is changed (docs/migrating-from-coreos.md)",
			c.Name, strings.Join(names, ", "), why))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Taking over a cluster from coreos/etcd-operator", "coreosMembers", names)
	return nil
}

// takeOverRefusal says why c, whose coreos-made member pods are coreos, cannot be taken over
// in place ("" when it can): its members must run an etcd of the minor release spec.version
// names, 3.5 or newer, without TLS (not built yet: the members would have to trust each other's
// certificates across the two operators' layouts), and keep their data in the pod (coreos'
// volumes are named and labelled its own way; their members would be removed with them).
func takeOverRefusal(c *etcdv1beta2.EtcdCluster, coreos []*corev1.Pod) string {
	if c.Spec.TLS != nil {
		return "spec.TLS is set, and taking over a cluster with TLS is not built yet: move it with a backup and a restore into a new cluster"
	}
	target := c.Spec.EtcdVersion()
	for _, p := range coreos {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				return fmt.Sprintf("pod %s keeps its data on volume claim %s, and taking over members on volumes is not built yet: move it with a backup and a restore into a new cluster", p.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
		if got, want := coreosPeerURL(p), member.PeerURL(c, p.Name); got != want {
			return fmt.Sprintf("pod %s advertises peer URL %q, and the members of this operator's own would name it %q (spec.pod.clusterDomain?): etcd would refuse them", p.Name, got, want)
		}
		v := member.PodVersion(p)
		if _, err := cluster.ParseVersion(v); err != nil {
			v = strings.TrimPrefix(p.Annotations["etcd.version"], "v")
		}
		switch {
		case cluster.MinorOf(v) == "":
			return fmt.Sprintf("the etcd version of pod %s is not known (image %q, annotation etcd.version %q)", p.Name, podImage(p), p.Annotations["etcd.version"])
		case cluster.CompareVersions(v, minTakeOverVersion) < 0:
			return fmt.Sprintf("pod %s runs etcd %s, and only clusters on etcd 3.5 or newer are taken over: upgrade it to 3.5 with the coreos operator first (spec.version, one minor release at a time), then annotate it again", p.Name, v)
		case cluster.MinorOf(v) != cluster.MinorOf(target):
			return fmt.Sprintf("pod %s runs etcd %s and spec.version asks for %s: the members that join run spec.version, which must be a release of the same minor version (%s); set it so, and upgrade after the takeover", p.Name, v, target, cluster.MinorOf(v))
		}
	}
	return ""
}

// podImage is the image of p's etcd container.
func podImage(p *corev1.Pod) string {
	for _, ct := range p.Spec.Containers {
		if ct.Name == member.ContainerName {
			return ct.Image
		}
	}
	return ""
}

// coreosPeerURL is the peer URL a coreos pod's etcd advertises (--initial-advertise-peer-urls,
// in its command or arguments, which coreos writes as one shell string), "" when none is found.
func coreosPeerURL(p *corev1.Pod) string {
	for _, ct := range p.Spec.Containers {
		if ct.Name != member.ContainerName {
			continue
		}
		for _, arg := range append(slices.Clone(ct.Command), ct.Args...) {
			for _, f := range strings.Fields(arg) {
				if v, ok := strings.CutPrefix(f, "--initial-advertise-peer-urls="); ok {
					return v
				}
			}
		}
	}
	return ""
}

// conditionReason is the pattern the API (metav1.Condition) allows for a condition's reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// dropCoreosConditions removes from c's status the conditions coreos/etcd-operator wrote, whose
// reasons ("Cluster available", "Scaling up 2 -> 3") the schema of metav1.Condition refuses: a
// Kubernetes without validation ratcheting would refuse every status patch that carries them,
// and this operator sets its own conditions of those types.
func dropCoreosConditions(c *etcdv1beta2.EtcdCluster) {
	c.Status.Conditions = slices.DeleteFunc(c.Status.Conditions, func(cond metav1.Condition) bool { return !conditionReason.MatchString(cond.Reason) })
}

// setHeld records in c's status that the pass stopped at the coreos hold (err says why), and
// returns err. Nothing is observed while a cluster is held: Available is Unknown, Scaling and
// Progressing are False for that reason, and Paused follows spec.paused, so no condition of
// an earlier pass (a paused one, or one before the coreos pods were seen) stands for this one.
func setHeld(c *etcdv1beta2.EtcdCluster, err error) error {
	why, msg := reason.Of(err), err.Error()
	setPaused(c)
	for _, cond := range []metav1.Condition{
		{Type: etcdv1beta2.ClusterConditionAvailable, Status: metav1.ConditionUnknown, Reason: why, Message: "not observed: the operator does not look at a cluster it holds (" + msg + ")"},
		{Type: etcdv1beta2.ClusterConditionScaling, Status: metav1.ConditionFalse, Reason: why, Message: msg},
		{Type: etcdv1beta2.ClusterConditionProgressing, Status: metav1.ConditionFalse, Reason: why, Message: msg},
	} {
		cond.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&c.Status.Conditions, cond)
	}
	return err
}

// coreosMembers counts the members of obs whose pods coreos/etcd-operator made.
func coreosMembers(obs *observation) int {
	n := 0
	for _, m := range obs.Members {
		if obs.Pods[m.PodName()].Coreos {
			n++
		}
	}
	return n
}
