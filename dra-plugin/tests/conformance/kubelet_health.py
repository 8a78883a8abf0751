"""A stand-in kubelet watching device health: calls
DRAResourceHealth.NodeWatchResources on the shim's DRA socket with stubs that
grpcio-tools generated, at test time, from the published kubelet protos.

usage: kubelet_health.py GEN_DIR SOCKET VERSION   (VERSION: v1 or v1alpha1)
Prints every NodeWatchResourcesResponse as one JSON line (proto field names),
flushed, until the stream ends or the process is killed.
"""
import json
import sys

GEN, SOCKET, VERSION = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, GEN)

import grpc  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402

import kubelet_dra_health_v1_api_pb2 as v1  # noqa: E402
import kubelet_dra_health_v1_api_pb2_grpc as v1_grpc  # noqa: E402
import kubelet_dra_health_v1alpha1_api_pb2 as v1alpha1  # noqa: E402
import kubelet_dra_health_v1alpha1_api_pb2_grpc as v1alpha1_grpc  # noqa: E402

OPTIONS = [("grpc.default_authority", "localhost")]
api, stub = {"v1": (v1, v1_grpc), "v1alpha1": (v1alpha1, v1alpha1_grpc)}[VERSION]

with grpc.insecure_channel("unix:" + SOCKET, options=OPTIONS) as channel:
    grpc.channel_ready_future(channel).result(timeout=30)
    stream = stub.DRAResourceHealthStub(channel).NodeWatchResources(api.NodeWatchResourcesRequest())
    for reply in stream:
        doc = MessageToDict(reply, preserving_proto_field_name=True,
                            always_print_fields_with_no_presence=True)
        print(json.dumps(doc), flush=True)
