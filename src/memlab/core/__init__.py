"""The memory pipeline: config, contract, parsing, merge, storage, queue, middleware.

Everything here is usable without a model: pass a :class:`memlab.backends.ScriptedBackend`
to :class:`MemoryUpdater` in tests. This namespace holds what a pipeline user needs; helpers
(atomic writes, JSON scanning, time and id utilities, token counters, message accessors) stay
in their modules, e.g. ``memlab.core.document.utc_iso``. The agent thread-state reducers of the
seed live in :mod:`memlab.compat`.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.core.clock import (
        RealScheduler,
        Scheduler,
        VirtualScheduler,
    )
    from memlab.core.config import (
        ConfigError,
        ConfigProvider,
        MemoryConfig,
        get_memory_config,
        memlab_home,
        reset_memory_config,
        resolve_storage_path,
        set_memory_config,
    )
    from memlab.core.contract import (
        FACT_CATEGORIES,
        HISTORY_SECTIONS,
        MAX_MESSAGE_CHARS,
        MINIMAL_VALID_UPDATE,
        SECTION_NAMES,
        UPLOAD_MARKER,
        USER_SECTIONS,
        FactCategory,
        MemoryUpdate,
        NewFact,
        SchemaBounds,
        SectionName,
        Violation,
        contract_schema,
        minimal_update,
        validate_update,
    )
    from memlab.core.document import (
        FactIdGenerator,
        SeededFactIds,
        create_empty_memory,
    )
    from memlab.core.injection import (
        TokenCounter,
        format_memory_for_injection,
        get_token_counter,
    )
    from memlab.core.merge import (
        MERGE_STRATEGIES,
        ApplyResult,
        BaselineMerge,
        CategoryCapMerge,
        MergeStrategy,
        NearDuplicateMerge,
        TimeDecayMerge,
        apply_updates,
        get_merge_strategy,
    )
    from memlab.core.messages import (
        filter_messages_for_memory,
        format_conversation_for_update,
    )
    from memlab.core.middleware import MemoryMiddleware
    from memlab.core.parsing import (
        FailureCategory,
        ParseOptions,
        ParseResult,
        Rung,
        parse_reply,
    )
    from memlab.core.prompts import (
        PromptError,
        PromptRegistry,
        PromptVariant,
        UnknownPromptError,
        get_prompt,
        render_prompt,
    )
    from memlab.core.queue import (
        ConversationContext,
        MemoryUpdateQueue,
        QueueStats,
        get_memory_queue,
        reset_memory_queue,
    )
    from memlab.core.similarity import near_duplicate_score
    from memlab.core.storage import (
        CorruptMemoryError,
        InMemoryStorage,
        JsonFileStorage,
        MemoryStorage,
        StorageError,
    )
    from memlab.core.updater import (
        MemoryUpdater,
        UpdateResult,
        update_memory_from_conversation,
    )

_EXPORTS: dict[str, str] = {
    "RealScheduler": "memlab.core.clock",
    "Scheduler": "memlab.core.clock",
    "VirtualScheduler": "memlab.core.clock",
    "ConfigError": "memlab.core.config",
    "ConfigProvider": "memlab.core.config",
    "MemoryConfig": "memlab.core.config",
    "get_memory_config": "memlab.core.config",
    "memlab_home": "memlab.core.config",
    "reset_memory_config": "memlab.core.config",
    "resolve_storage_path": "memlab.core.config",
    "set_memory_config": "memlab.core.config",
    "FACT_CATEGORIES": "memlab.core.contract",
    "HISTORY_SECTIONS": "memlab.core.contract",
    "MAX_MESSAGE_CHARS": "memlab.core.contract",
    "MINIMAL_VALID_UPDATE": "memlab.core.contract",
    "SECTION_NAMES": "memlab.core.contract",
    "UPLOAD_MARKER": "memlab.core.contract",
    "USER_SECTIONS": "memlab.core.contract",
    "FactCategory": "memlab.core.contract",
    "MemoryUpdate": "memlab.core.contract",
    "NewFact": "memlab.core.contract",
    "SchemaBounds": "memlab.core.contract",
    "SectionName": "memlab.core.contract",
    "Violation": "memlab.core.contract",
    "contract_schema": "memlab.core.contract",
    "minimal_update": "memlab.core.contract",
    "validate_update": "memlab.core.contract",
    "FactIdGenerator": "memlab.core.document",
    "SeededFactIds": "memlab.core.document",
    "create_empty_memory": "memlab.core.document",
    "TokenCounter": "memlab.core.injection",
    "format_memory_for_injection": "memlab.core.injection",
    "get_token_counter": "memlab.core.injection",
    "MERGE_STRATEGIES": "memlab.core.merge",
    "ApplyResult": "memlab.core.merge",
    "BaselineMerge": "memlab.core.merge",
    "CategoryCapMerge": "memlab.core.merge",
    "MergeStrategy": "memlab.core.merge",
    "NearDuplicateMerge": "memlab.core.merge",
    "TimeDecayMerge": "memlab.core.merge",
    "apply_updates": "memlab.core.merge",
    "get_merge_strategy": "memlab.core.merge",
    "filter_messages_for_memory": "memlab.core.messages",
    "format_conversation_for_update": "memlab.core.messages",
    "MemoryMiddleware": "memlab.core.middleware",
    "FailureCategory": "memlab.core.parsing",
    "ParseOptions": "memlab.core.parsing",
    "ParseResult": "memlab.core.parsing",
    "Rung": "memlab.core.parsing",
    "parse_reply": "memlab.core.parsing",
    "PromptError": "memlab.core.prompts",
    "PromptRegistry": "memlab.core.prompts",
    "PromptVariant": "memlab.core.prompts",
    "UnknownPromptError": "memlab.core.prompts",
    "get_prompt": "memlab.core.prompts",
    "render_prompt": "memlab.core.prompts",
    "ConversationContext": "memlab.core.queue",
    "MemoryUpdateQueue": "memlab.core.queue",
    "QueueStats": "memlab.core.queue",
    "get_memory_queue": "memlab.core.queue",
    "reset_memory_queue": "memlab.core.queue",
    "near_duplicate_score": "memlab.core.similarity",
    "CorruptMemoryError": "memlab.core.storage",
    "InMemoryStorage": "memlab.core.storage",
    "JsonFileStorage": "memlab.core.storage",
    "MemoryStorage": "memlab.core.storage",
    "StorageError": "memlab.core.storage",
    "MemoryUpdater": "memlab.core.updater",
    "UpdateResult": "memlab.core.updater",
    "update_memory_from_conversation": "memlab.core.updater",
}

__all__ = [
    "FACT_CATEGORIES",
    "HISTORY_SECTIONS",
    "MAX_MESSAGE_CHARS",
    "MERGE_STRATEGIES",
    "MINIMAL_VALID_UPDATE",
    "SECTION_NAMES",
    "UPLOAD_MARKER",
    "USER_SECTIONS",
    "ApplyResult",
    "BaselineMerge",
    "CategoryCapMerge",
    "ConfigError",
    "ConfigProvider",
    "ConversationContext",
    "CorruptMemoryError",
    "FactCategory",
    "FactIdGenerator",
    "FailureCategory",
    "InMemoryStorage",
    "JsonFileStorage",
    "MemoryConfig",
    "MemoryMiddleware",
    "MemoryStorage",
    "MemoryUpdate",
    "MemoryUpdateQueue",
    "MemoryUpdater",
    "MergeStrategy",
    "NearDuplicateMerge",
    "NewFact",
    "ParseOptions",
    "ParseResult",
    "PromptError",
    "PromptRegistry",
    "PromptVariant",
    "QueueStats",
    "RealScheduler",
    "Rung",
    "Scheduler",
    "SchemaBounds",
    "SectionName",
    "SeededFactIds",
    "StorageError",
    "TimeDecayMerge",
    "TokenCounter",
    "UnknownPromptError",
    "UpdateResult",
    "Violation",
    "VirtualScheduler",
    "apply_updates",
    "contract_schema",
    "create_empty_memory",
    "filter_messages_for_memory",
    "format_conversation_for_update",
    "format_memory_for_injection",
    "get_memory_config",
    "get_memory_queue",
    "get_merge_strategy",
    "get_prompt",
    "get_token_counter",
    "memlab_home",
    "minimal_update",
    "near_duplicate_score",
    "parse_reply",
    "render_prompt",
    "reset_memory_config",
    "reset_memory_queue",
    "resolve_storage_path",
    "set_memory_config",
    "update_memory_from_conversation",
    "validate_update",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
