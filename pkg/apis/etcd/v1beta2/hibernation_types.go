package v1beta2

// ClusterConditionHibernated is True once spec.hibernate stopped every member (reason
// Hibernated), False while they stop (Hibernating) and after a wake (Awake).
const ClusterConditionHibernated = "Hibernated"

// Reasons of the Hibernated condition.
const (
	ReasonHibernating = "Hibernating"
	ReasonHibernated  = "Hibernated"
	ReasonAwake       = "Awake"
)
