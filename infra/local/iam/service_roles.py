"""What the runtime does on behalf of AWS services, authorized as those services are on AWS.

- Lambda's SQS event source mapping polls the queue with the FUNCTION's execution role
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html, "Setting up Lambda
  execution role permissions"; https://docs.aws.amazon.com/lambda/latest/dg/lambda-intro-execution-role.html).
- A pipe reads its source and puts to its target with its own role, RoleArn
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-permissions.html).
- EventBridge Scheduler invokes a schedule's target with the schedule's role, Target.RoleArn
  (https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge-scheduler.html#using-eventbridge-scheduler-execution-role).
- An EventBridge rule invokes a Lambda target as the service principal events.amazonaws.com,
  allowed by the function's resource policy (AWS::Lambda::Permission) for that rule
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-lambda-permissions).

A role's session is the principal of its calls (an Authorizer, as for a function's own calls); a
service principal's request carries the context AWS gives it: aws:SourceArn (the rule),
aws:SourceAccount, aws:PrincipalServiceName, aws:PrincipalIsAWSService
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html).
"""

import threading
from collections.abc import Callable, Mapping
from typing import Any

from infra.local.events.event_sources import RuleSpec
from infra.local.iam.authorizer import Authorizer
from infra.local.iam.calls import ApiCall
from infra.local.iam.evaluator import Decision, PolicyEvaluator
from infra.local.iam.profiles import StackPolicies
from infra.local.lambda_.functions import FunctionSpec
from infra.local.lambda_.triggers import ScheduleSource
from infra.local.runtime.aws import ACCOUNT_ID
from infra.local.runtime.aws_hooks import AwsCallHooks

EVENTBRIDGE = "events.amazonaws.com"


class ServiceAuthorization:
    """The authorizers of the calls the runtime makes as a service would, from one stack's
    roles and resource policies."""

    def __init__(self, policies: StackPolicies, evaluator: PolicyEvaluator) -> None:
        self._policies = policies
        self._evaluator = evaluator
        self._authorizers: dict[tuple[str, str], Authorizer] = {}
        self._service_decisions: dict[tuple[str, str, str, str], Decision] = {}
        self._lock = threading.Lock()

    def role(self, role_arn: str, session_name: str) -> Authorizer:
        """The authorizer of a service's session of `role_arn`."""
        key = (role_arn, session_name)
        with self._lock:
            if key not in self._authorizers:
                profile = self._policies.profile(role_arn, session_name)
                self._authorizers[key] = Authorizer(profile, self._evaluator)
            return self._authorizers[key]

    def function_role(self, spec: FunctionSpec) -> Authorizer:
        """Lambda's session of the function's execution role (its event source mappings')."""
        return self.role(spec.role_arn, spec.function_name)

    def schedule_refusals(
        self, specs: Mapping[str, FunctionSpec]
    ) -> Callable[[ScheduleSource], str | None]:
        """Why a schedule may not invoke its function target (None: it may)."""
        return lambda schedule: self.invoke_refusal(
            specs[schedule.function].arn,
            role_arn=schedule.role_arn,
            session_name=schedule.arn.rsplit("/", 1)[-1],
            source_arn=schedule.arn,
        )

    def rule_target_refusals(
        self, specs: Mapping[str, FunctionSpec]
    ) -> Callable[[RuleSpec, str], str | None]:
        """Why a rule may not invoke a function target, by logical id (None: it may)."""
        return lambda rule, function: self.invoke_refusal(
            specs[function].arn, role_arn=None, session_name="", source_arn=rule.arn
        )

    def invoke_refusal(
        self, function_arn: str, *, role_arn: str | None, session_name: str, source_arn: str
    ) -> str | None:
        """Why a service may not invoke the function: with `role_arn` (Scheduler's target role),
        else as EventBridge for `source_arn` by the function's resource policy. None: it may."""
        if role_arn is None:
            return self.service_refusal(
                EVENTBRIDGE, "lambda:InvokeFunction", function_arn, source_arn
            )
        call = ApiCall("lambda", "Invoke", {"FunctionName": function_arn})
        refusal = self.role(role_arn, session_name).refusal(call)
        return None if refusal is None else f"{role_arn}: {refusal}"

    def service_refusal(
        self, service: str, action: str, resource: str, source_arn: str
    ) -> str | None:
        """Why `service` (events.amazonaws.com, ...) may not do `action` on `resource` for the
        resource `source_arn` (a rule), by the resource's own policy; None when it may."""
        key = (service, action, resource, source_arn)
        with self._lock:
            decision = self._service_decisions.get(key)
        if decision is None:
            decision = self._evaluator.decide(self._service_simulation(*key))
            with self._lock:
                self._service_decisions[key] = decision
        if decision.allowed:
            return None
        why = "an explicit Deny" if decision.explicit_deny else "no statement allows it"
        return f"{service} may not {action} on {resource} for {source_arn}: {why}"

    def _service_simulation(
        self, service: str, action: str, resource: str, source_arn: str
    ) -> dict[str, Any]:
        simulation: dict[str, Any] = {
            "request": {
                "principal": service,
                "action": action,
                "resource": {"resource": resource, "accountId": ACCOUNT_ID},
                "contextVariables": {
                    "aws:SourceArn": source_arn,
                    "aws:SourceAccount": ACCOUNT_ID,
                    "aws:PrincipalServiceName": service,
                    "aws:PrincipalIsAWSService": "true",
                    "aws:SecureTransport": "true",
                    "aws:RequestedRegion": self._policies.region,
                },
            },
            "identityPolicies": [],
            "serviceControlPolicies": [],
            "resourceControlPolicies": [],
        }
        policy = self._policies.resource_policies.get(resource)
        if policy is not None:
            simulation["resourcePolicy"] = policy
        return simulation


def authorized_client(client: Any, principal: str, authorizer: Authorizer) -> Any:
    """`client`, its every call authorized first: one AWS would refuse gets the service's
    AccessDenied error (a ClientError) and never reaches moto. `principal` names the caller in
    the refusal's log line."""
    AwsCallHooks(principal, _not_accounted, authorizer).attach(client.meta.events)
    return client


def _not_accounted(_call: object) -> None:
    """The runtime's own calls stay out of the functions' call accounting."""
