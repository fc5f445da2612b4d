"""FLY's fast lane on AWS (`gateway.fly: channel`, docs/status.md "FLY events"): the mesh's AppSync
Events API, with one channel namespace (`asya`) holding one channel per task (`asya.fly_channel`).

Every mode of the API is IAM: actors publish (`appsync:EventPublish` on the namespace), the gateway's
API function connects and subscribes (`appsync:EventConnect` on the API, `appsync:EventSubscribe` on
the namespace) and publishes what actors outside the mesh post; nothing else may, and no API key
exists. The namespace's `onSubscribe` handler refuses
a subscription with a wildcard, so a subscriber only ever hears the one task it names.
"""

from __future__ import annotations

from aws_cdk import aws_appsync as appsync
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya.fly_channel import NAMESPACE
from asya.names import resource_name

API_SUFFIX = "fly"  # the API is named `asya-<ns>-fly`
# AppSync's JavaScript runtime: a subscription to `/asya/*` (or any wildcard) would hear every task
ON_SUBSCRIBE = """export function onSubscribe(ctx) {
  if (ctx.info.channel.path.includes('*')) {
    util.unauthorized();
  }
}
"""


class FlyApi(Construct):
    """Exposes `api` (the Event API) and `channels` (its namespace)."""

    def __init__(self, scope: Construct, construct_id: str, *, namespace: str) -> None:
        super().__init__(scope, construct_id)
        iam_mode = appsync.AppSyncAuthorizationType.IAM
        self.api = appsync.EventApi(
            self,
            "Api",
            api_name=resource_name(namespace, API_SUFFIX),
            authorization_config=appsync.EventApiAuthConfig(
                auth_providers=[appsync.AppSyncAuthProvider(authorization_type=iam_mode)],
                connection_auth_mode_types=[iam_mode],
                default_publish_auth_mode_types=[iam_mode],
                default_subscribe_auth_mode_types=[iam_mode],
            ),
        )
        self.channels = self.api.add_channel_namespace(NAMESPACE, code=appsync.Code.from_inline(ON_SUBSCRIBE))

    def grant_publish(self, role: iam.IGrantable) -> None:
        """An actor: publish on any task's channel of the namespace, and nothing more."""
        self.channels.grant_publish(role)

    def grant_follow(self, role: iam.IGrantable) -> None:
        """The gateway's API function: connect and subscribe to the channels of the namespace (its
        follows), and publish on them (FLY events posted by actors outside the mesh)."""
        self.api.grant_connect(role)
        self.channels.grant_subscribe(role)
        self.channels.grant_publish(role)
