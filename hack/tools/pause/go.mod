module github.com/etcd-operator/etcd-operator/hack/tools/pause

go 1.26.0
