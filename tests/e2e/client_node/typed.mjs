// The official JavaScript client (@kubernetes/client-node) against the server: each upstream
// kind listed and read through its typed API, slices watched, /version/ read. Prints one JSON
// object of what it saw; the e2e test asserts on it.
// Usage: node typed.mjs <slice> <node> <resource pool status request>
import * as k8s from "@kubernetes/client-node";

const [sliceName, nodeName, requestName] = process.argv.slice(2);
const config = new k8s.KubeConfig();
config.loadFromFile(process.env.KUBECONFIG);
const core = config.makeApiClient(k8s.CoreV1Api);
const resource = config.makeApiClient(k8s.ResourceV1Api);
const resourceV1alpha3 = config.makeApiClient(k8s.ResourceV1alpha3Api);
const rbac = config.makeApiClient(k8s.RbacAuthorizationV1Api);
const version = config.makeApiClient(k8s.VersionApi);

function watchedSlice() {
  // resourceVersion 0: the current objects come first, as ADDED events.
  return new Promise((resolve, reject) => {
    let request;
    const timer = setTimeout(() => reject(new Error("no ADDED event for " + sliceName)), 30000);
    new k8s.Watch(config)
      .watch(
        "/apis/resource.k8s.io/v1/resourceslices",
        { resourceVersion: "0" },
        (type, obj) => {
          if (type === "ADDED" && obj.metadata.name === sliceName) {
            clearTimeout(timer);
            request.abort();
            resolve(obj);
          }
        },
        (err) => (err && err.name !== "AbortError" ? reject(err) : undefined),
      )
      .then((r) => (request = r), reject);
  });
}

const slice = await resource.readResourceSlice({ name: sliceName });
const node = await core.readNode({ name: nodeName });
const watched = await watchedSlice();
const request = await resourceV1alpha3.readResourcePoolStatusRequest({ name: requestName });
const seen = {
  version: (await version.getCode()).gitVersion,
  namespaces: (await core.listNamespace()).items.map((n) => n.metadata.name),
  nodes: (await core.listNode()).items.map((n) => n.metadata.name),
  nodeCapacity: node.status.capacity,
  nodeBootID: node.status.nodeInfo.bootID,
  pods: (await core.listNamespacedPod({ namespace: "default" })).kind,
  events: (await core.listNamespacedEvent({ namespace: "default" })).kind,
  deviceClasses: (await resource.listDeviceClass()).items.length,
  slices: (await resource.listResourceSlice()).items.map((s) => s.metadata.name),
  sliceCapacity: slice.spec.devices[0].capacity,
  watchedCapacity: watched.spec.devices[0].capacity,
  claims: (await resource.listResourceClaimForAllNamespaces()).kind,
  templates: (await resource.listResourceClaimTemplateForAllNamespaces()).kind,
  clusterRoles: (await rbac.listClusterRole()).items.map((r) => r.metadata.name),
  requestApiVersion: request.apiVersion,
  requestSpec: request.spec,
  requests: (await resourceV1alpha3.listResourcePoolStatusRequest()).items.map(
    (r) => r.metadata.name,
  ),
};
console.log(JSON.stringify(seen));
