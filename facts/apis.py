"""Thin views over the store's services (facts.writes, facts.conflicts, facts.consent, ...) and facts.selectors:
validate, check the key's project, call, serialize."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import selectors
from facts.conflicts import conflict_resolve
from facts.consent import consent_grant, project_update
from facts.errors import ConflictNotOpen, ConsentMissing, ProcedureNotActive, ServiceValidationError
from facts.identity import identity_block_create, identity_block_delete, identity_block_update
from facts.procedures import procedure_create, procedure_retract, procedure_update
from facts.writes import MAX_BATCH, FactInput, fact_create_batch, fact_retract, fact_update
from facts.models import ConflictSet, Fact, IdentityBlock, Procedure
from facts.serializers import (
    ConflictDetailSerializer,
    ConflictListQuerySerializer,
    ConflictPageSerializer,
    ConflictResolveSerializer,
    EventOutSerializer,
    FactBatchInSerializer,
    FactBatchOutSerializer,
    FactHistorySerializer,
    FactInSerializer,
    FactListQuerySerializer,
    FactOutSerializer,
    FactPageSerializer,
    FactPatchSerializer,
    FactWrittenSerializer,
    ScopeQuerySerializer,
    conflict_out,
    event_out,
    fact_out,
)
from facts.project_serializers import (
    ConsentGrantSerializer,
    ConsentOutSerializer,
    ConsentsSerializer,
    ProjectOutSerializer,
    ProjectPatchSerializer,
    consent_out,
    project_out,
)
from facts.identity_and_procedure_serializers import (
    IdentityBlockInSerializer,
    IdentityBlockListQuerySerializer,
    IdentityBlockListSerializer,
    IdentityBlockOutSerializer,
    IdentityBlockPatchSerializer,
    ProcedureInSerializer,
    ProcedureListQuerySerializer,
    ProcedureOutSerializer,
    ProcedurePageSerializer,
    ProcedurePatchSerializer,
    identity_block_out,
    procedure_out,
)
from hakimem.auth import require_project
from hakimem.errors import ApiError, ErrorCode, invalid
from hakimem.fields import flatten_errors
from hakimem.schema import errors
from hakimem.serializers import query_params, validated
from hakimem.validators import SCOPE_ID_HELP, is_scope_id


def actor_of(request) -> str:
    return f"api_key:{request.user.key_id}"


def validate_batch(request, serializer_class, plural: str) -> tuple[list[dict], bool]:
    """One object, or {"<plural>": [...]} with up to 500. All-or-nothing: every bad item is reported by
    index and field, and nothing is written."""
    data = request.data
    is_batch = isinstance(data, dict) and plural in data
    if is_batch:
        if set(data) != {plural}:
            raise invalid(
                [{"index": None, "field": k, "message": "unknown field"} for k in sorted(set(data) - {plural})]
            )
        raw_items = data[plural]
        if not isinstance(raw_items, list) or not 1 <= len(raw_items) <= MAX_BATCH:
            raise invalid([{"index": None, "field": plural, "message": f"must be a list of 1 to {MAX_BATCH} objects"}])
    else:
        raw_items = [data]
    # One list serializer binds the fields once; a serializer per item would deep-copy them every time.
    serializer = serializer_class(data=raw_items, many=True)
    if not serializer.is_valid():
        by_index = serializer.errors  # {index: errors} for the failing items (a list in older DRF releases)
        if isinstance(by_index, list):
            by_index = dict(enumerate(by_index))
        errors = []
        for index, item_errors in sorted(by_index.items()):
            if item_errors:
                errors.extend(flatten_errors(item_errors, index if is_batch else None))
        raise invalid(errors)
    items = [dict(item) for item in serializer.validated_data]
    for item in items:
        require_project(request, item["project_id"])
    return items, is_batch


def page_response(rows, next_cursor, render, key: str) -> Response:
    return Response({key: [render(r) for r in rows], "next_cursor": next_cursor})


def keyset(queryset, time_field, params):
    try:
        return selectors.keyset_page(
            queryset, time_field=time_field, cursor=params.get("cursor"), limit=params["limit"]
        )
    except selectors.InvalidCursor as exc:
        raise invalid([{"index": None, "field": "cursor", "message": str(exc)}]) from exc


def service_errors(exc: ServiceValidationError) -> ApiError:
    if isinstance(exc, ConsentMissing):
        return ApiError(
            ErrorCode.CONSENT_MISSING,
            "The subject has not consented to these categories; nothing was written.",
            status_code=403,
            details={"errors": exc.errors},
        )
    return invalid(exc.errors)


def one_or_batch(name: str, one, batch):
    return PolymorphicProxySerializer(component_name=name, serializers=[one, batch], resource_type_field_name=None)


class FactsApi(APIView):
    @extend_schema(
        operation_id="facts_list",
        summary="A scope's facts, newest first",
        parameters=[FactListQuerySerializer],
        responses={200: FactPageSerializer, **errors(400, 404)},
    )
    def get(self, request):
        params = validated(FactListQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        qs = selectors.fact_list(project_id=params["project_id"], subject_id=params["subject_id"], filters=params)
        rows, next_cursor = keyset(qs, "recorded_from", params)
        return page_response(rows, next_cursor, fact_out, "facts")

    @extend_schema(
        summary="Write one fact, or a batch of up to 500 (all-or-nothing)",
        request=one_or_batch("FactWrite", FactInSerializer, FactBatchInSerializer),
        responses={
            201: one_or_batch("FactWriteAnswer", FactWrittenSerializer, FactBatchOutSerializer),
            **errors(400, 403, 404, 413, 415),
        },
    )
    def post(self, request):
        items, is_batch = validate_batch(request, FactInSerializer, "facts")
        return self.write(request, items, is_batch)

    def write(self, request, items: list[dict], is_batch: bool) -> Response:
        """The validated items written in this request: 201 with one answer per item."""
        try:
            results = fact_create_batch(items=[FactInput(**item) for item in items], actor=actor_of(request))
        except ServiceValidationError as exc:
            raise service_errors(exc) from exc
        rendered = [
            fact_out(
                r.fact,
                deduplicated=r.deduplicated,
                conflict_set_id=r.conflict_set.id if r.conflict_set else None,
                with_write_flags=True,
            )
            for r in results
        ]
        return Response({"facts": rendered} if is_batch else rendered[0], status=status.HTTP_201_CREATED)


def _fact_or_404(request, fact_id):
    fact = selectors.fact_get(project_id=request.user.project_id, fact_id=fact_id)
    if fact is None:
        raise ApiError(ErrorCode.NOT_FOUND, "No such fact.", status_code=404)
    return fact


class FactDetailApi(APIView):
    @extend_schema(summary="One fact", responses={200: FactOutSerializer, **errors(404)})
    def get(self, request, fact_id):
        return Response(fact_out(_fact_or_404(request, fact_id)))

    @extend_schema(
        summary="Edit a fact: a new text makes a new version, other fields change in place",
        request=FactPatchSerializer,
        responses={200: FactWrittenSerializer, **errors(400, 403, 404, 409, 413, 415)},
    )
    def patch(self, request, fact_id):
        fact = _fact_or_404(request, fact_id)
        changes = validated(FactPatchSerializer, request.data)
        if "valid_to" in changes and changes["valid_to"] and fact.valid_from and changes["valid_to"] < fact.valid_from:
            raise invalid([{"index": None, "field": "valid_to", "message": "must not be before valid_from"}])
        if fact.status != "active":
            raise ApiError(
                ErrorCode.FACT_NOT_ACTIVE,
                f"The fact is {fact.status}; only active facts can be edited.",
                status_code=409,
            )
        try:
            result = fact_update(fact=fact, changes=changes, actor=actor_of(request))
        except ServiceValidationError as exc:
            if any(e["field"] == "status" for e in exc.errors):  # retracted or superseded meanwhile
                raise ApiError(ErrorCode.FACT_NOT_ACTIVE, str(exc), status_code=409) from exc
            raise service_errors(exc) from exc
        return Response(
            fact_out(
                result.fact,
                deduplicated=result.deduplicated,
                conflict_set_id=result.conflict_set.id if result.conflict_set else None,
                with_write_flags=True,
            )
        )

    @extend_schema(summary="Retract a fact (never served again)", responses={200: FactOutSerializer, **errors(404)})
    def delete(self, request, fact_id):
        try:
            fact = fact_retract(fact=_fact_or_404(request, fact_id))
        except Fact.DoesNotExist as exc:  # its subject was erased since it was looked up
            raise ApiError(ErrorCode.NOT_FOUND, "No such fact.", status_code=404) from exc
        return Response(fact_out(fact))


class FactHistoryApi(APIView):
    @extend_schema(
        summary="A fact's version chain, oldest first", responses={200: FactHistorySerializer, **errors(404)}
    )
    def get(self, request, fact_id):
        chain = selectors.fact_history(fact=_fact_or_404(request, fact_id))
        return Response({"versions": [fact_out(f) for f in chain]})


class EventDetailApi(APIView):
    @extend_schema(
        summary="One event, with its fact extraction's status and the facts it produced",
        responses={200: EventOutSerializer, **errors(404)},
    )
    def get(self, request, event_id):
        event = selectors.event_get(project_id=request.user.project_id, event_id=event_id)
        if event is None:
            raise ApiError(ErrorCode.NOT_FOUND, "No such event.", status_code=404)
        return Response(event_out(event))


class ConflictsApi(APIView):
    @extend_schema(
        operation_id="conflicts_list",
        summary="A project's (or a subject's) conflict sets",
        parameters=[ConflictListQuerySerializer],
        responses={200: ConflictPageSerializer, **errors(400, 404)},
    )
    def get(self, request):
        params = validated(ConflictListQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        qs = selectors.conflict_list(
            project_id=params["project_id"], subject_id=params.get("subject_id"), status=params.get("status")
        )
        rows, next_cursor = keyset(qs, "opened_at", params)
        return page_response(rows, next_cursor, conflict_out, "conflicts")


def _conflict_or_404(request, conflict_id):
    conflict_set = selectors.conflict_get(project_id=request.user.project_id, conflict_id=conflict_id)
    if conflict_set is None:
        raise ApiError(ErrorCode.NOT_FOUND, "No such conflict set.", status_code=404)
    return conflict_set


class ConflictDetailApi(APIView):
    @extend_schema(summary="A conflict set and its members", responses={200: ConflictDetailSerializer, **errors(404)})
    def get(self, request, conflict_id):
        conflict_set = _conflict_or_404(request, conflict_id)
        return Response(conflict_out(conflict_set, selectors.conflict_members(conflict_set=conflict_set)))


class ConflictResolveApi(APIView):
    @extend_schema(
        summary="Close an open conflict set: keep some facts, or dismiss it",
        request=ConflictResolveSerializer,
        responses={200: ConflictDetailSerializer, **errors(400, 404, 409, 413, 415)},
    )
    def post(self, request, conflict_id):
        conflict_set = _conflict_or_404(request, conflict_id)
        params = validated(ConflictResolveSerializer, request.data)
        try:
            conflict_set = conflict_resolve(
                conflict_set=conflict_set,
                actor=actor_of(request),
                keep=params.get("keep"),
                dismiss=params.get("dismiss", False),
                note=params.get("note", ""),
            )
        except ConflictSet.DoesNotExist as exc:  # its subject was erased since it was looked up
            raise ApiError(ErrorCode.NOT_FOUND, "No such conflict set.", status_code=404) from exc
        except ConflictNotOpen as exc:
            raise ApiError(
                ErrorCode.CONFLICT_NOT_OPEN, f"This conflict set is not open ({exc}).", status_code=409
            ) from exc
        except ServiceValidationError as exc:
            raise service_errors(exc) from exc
        return Response(conflict_out(conflict_set, selectors.conflict_members(conflict_set=conflict_set)))


def subject_in_path(subject_id: str) -> None:
    if not is_scope_id(subject_id):
        raise invalid([{"index": None, "field": "subject_id", "message": f"must be {SCOPE_ID_HELP}"}])


class ProjectApi(APIView):
    """GET / PATCH /v1/project: the settings of the key's project."""

    @extend_schema(summary="The key's project settings", responses={200: ProjectOutSerializer, **errors()})
    def get(self, request):
        return Response(project_out(selectors.project_settings(request.user.project_id)))

    @extend_schema(
        summary="Change the key's project settings (the fields sent)",
        request=ProjectPatchSerializer,
        responses={200: ProjectOutSerializer, **errors(400, 413, 415)},
    )
    def patch(self, request):
        changes = validated(ProjectPatchSerializer, request.data)
        project_update(project_id=request.user.project_id, changes=dict(changes))
        return Response(project_out(selectors.project_settings(request.user.project_id)))


class SubjectConsentsApi(APIView):
    """GET: the categories the subject consents to now, and every grant and revocation. POST: grant one."""

    @extend_schema(
        summary="A subject's consents: the categories now, and every grant and revocation",
        parameters=[
            ScopeQuerySerializer,
            OpenApiParameter("subject_id", str, OpenApiParameter.PATH, pattern=r"^[A-Za-z0-9._:@-]{1,128}$"),
        ],
        responses={200: ConsentsSerializer, **errors(400, 404)},
    )
    def get(self, request, subject_id):
        params = validated(ScopeQuerySerializer, query_params(request))
        subject_in_path(subject_id)
        require_project(request, params["project_id"])
        history = list(selectors.consent_history(project_id=params["project_id"], subject_id=subject_id))
        return Response(
            {
                "project_id": params["project_id"],
                "subject_id": subject_id,
                "consented": sorted({c.category for c in history if c.revoked_at is None}),
                "history": [consent_out(c) for c in history],
            }
        )

    @extend_schema(
        summary="Grant consent to a category (200 when it already was)",
        request=ConsentGrantSerializer,
        parameters=[OpenApiParameter("subject_id", str, OpenApiParameter.PATH, pattern=r"^[A-Za-z0-9._:@-]{1,128}$")],
        responses={201: ConsentOutSerializer, 200: ConsentOutSerializer, **errors(400, 404, 413, 415)},
    )
    def post(self, request, subject_id):
        params = validated(ConsentGrantSerializer, request.data)
        subject_in_path(subject_id)
        require_project(request, params["project_id"])
        consent, created = consent_grant(
            project_id=params["project_id"], subject_id=subject_id, category=params["category"], actor=actor_of(request)
        )
        return Response(consent_out(consent), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class IdentityBlocksApi(APIView):
    """GET: the blocks that apply to a subject (or the project-wide ones), in serving order. POST: a new one."""

    @extend_schema(
        operation_id="identity_blocks_list",
        summary="Identity blocks: the project-wide ones, and a subject's",
        parameters=[IdentityBlockListQuerySerializer],
        responses={200: IdentityBlockListSerializer, **errors(400, 404)},
    )
    def get(self, request):
        params = validated(IdentityBlockListQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        blocks = selectors.identity_block_list(project_id=params["project_id"], subject_id=params.get("subject_id"))
        return Response({"identity_blocks": [identity_block_out(b) for b in blocks]})

    @extend_schema(
        summary="Write an identity block: an always-on text for a subject or the whole project",
        request=IdentityBlockInSerializer,
        responses={201: IdentityBlockOutSerializer, **errors(400, 404, 413, 415)},
    )
    def post(self, request):
        params = validated(IdentityBlockInSerializer, request.data)
        require_project(request, params["project_id"])
        try:
            block = identity_block_create(**params)
        except ServiceValidationError as exc:
            raise service_errors(exc) from exc
        return Response(identity_block_out(block), status=status.HTTP_201_CREATED)


def _identity_block_or_404(request, block_id) -> IdentityBlock:
    block = selectors.identity_block_get(project_id=request.user.project_id, block_id=block_id)
    if block is None:
        raise ApiError(ErrorCode.NOT_FOUND, "No such identity block.", status_code=404)
    return block


class IdentityBlockDetailApi(APIView):
    @extend_schema(summary="One identity block", responses={200: IdentityBlockOutSerializer, **errors(404)})
    def get(self, request, block_id):
        return Response(identity_block_out(_identity_block_or_404(request, block_id)))

    @extend_schema(
        summary="Edit an identity block (the fields sent)",
        request=IdentityBlockPatchSerializer,
        responses={200: IdentityBlockOutSerializer, **errors(400, 404, 413, 415)},
    )
    def patch(self, request, block_id):
        block = _identity_block_or_404(request, block_id)
        changes = validated(IdentityBlockPatchSerializer, request.data)
        try:
            block = identity_block_update(block=block, changes=changes)
        except IdentityBlock.DoesNotExist as exc:  # deleted since it was looked up
            raise ApiError(ErrorCode.NOT_FOUND, "No such identity block.", status_code=404) from exc
        except ServiceValidationError as exc:
            raise service_errors(exc) from exc
        return Response(identity_block_out(block))

    @extend_schema(
        summary="Delete an identity block (set enabled false to keep it unserved)", responses={204: None, **errors(404)}
    )
    def delete(self, request, block_id):
        identity_block_delete(block=_identity_block_or_404(request, block_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProceduresApi(APIView):
    @extend_schema(
        operation_id="procedures_list",
        summary="Procedures: the project-wide ones, and a subject's, newest first",
        parameters=[ProcedureListQuerySerializer],
        responses={200: ProcedurePageSerializer, **errors(400, 404)},
    )
    def get(self, request):
        params = validated(ProcedureListQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        qs = selectors.procedure_list(
            project_id=params["project_id"], subject_id=params.get("subject_id"), filters=params
        )
        rows, next_cursor = keyset(qs, "created_at", params)
        return page_response(rows, next_cursor, procedure_out, "procedures")

    @extend_schema(
        summary="Write a procedure (a workflow) for a subject or the whole project",
        request=ProcedureInSerializer,
        responses={201: ProcedureOutSerializer, **errors(400, 404, 413, 415)},
    )
    def post(self, request):
        params = validated(ProcedureInSerializer, request.data)
        require_project(request, params["project_id"])
        return Response(procedure_out(procedure_create(**params)), status=status.HTTP_201_CREATED)


def _procedure_or_404(request, procedure_id) -> Procedure:
    procedure = selectors.procedure_get(project_id=request.user.project_id, procedure_id=procedure_id)
    if procedure is None:
        raise ApiError(ErrorCode.NOT_FOUND, "No such procedure.", status_code=404)
    return procedure


class ProcedureDetailApi(APIView):
    @extend_schema(summary="One procedure", responses={200: ProcedureOutSerializer, **errors(404)})
    def get(self, request, procedure_id):
        return Response(procedure_out(_procedure_or_404(request, procedure_id)))

    @extend_schema(
        summary="Edit a procedure in place (the fields sent); a new title or text is embedded again",
        request=ProcedurePatchSerializer,
        responses={200: ProcedureOutSerializer, **errors(400, 404, 409, 413, 415)},
    )
    def patch(self, request, procedure_id):
        procedure = _procedure_or_404(request, procedure_id)
        changes = validated(ProcedurePatchSerializer, request.data)
        try:
            procedure = procedure_update(procedure=procedure, changes=changes)
        except Procedure.DoesNotExist as exc:  # its scope was erased since it was looked up
            raise ApiError(ErrorCode.NOT_FOUND, "No such procedure.", status_code=404) from exc
        except ProcedureNotActive as exc:
            raise ApiError(
                ErrorCode.PROCEDURE_NOT_ACTIVE,
                f"{str(exc).capitalize()}; only active procedures can be edited.",
                status_code=409,
            ) from exc
        return Response(procedure_out(procedure))

    @extend_schema(
        summary="Retract a procedure (never served again; erasure deletes it)",
        responses={200: ProcedureOutSerializer, **errors(404)},
    )
    def delete(self, request, procedure_id):
        try:
            procedure = procedure_retract(procedure=_procedure_or_404(request, procedure_id))
        except Procedure.DoesNotExist as exc:
            raise ApiError(ErrorCode.NOT_FOUND, "No such procedure.", status_code=404) from exc
        return Response(procedure_out(procedure))
