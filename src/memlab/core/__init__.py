"""The memory pipeline: config, contract, parsing, merge, storage, queue, middleware.

Everything here is usable without a model: pass a :class:`memlab.backends.ScriptedBackend`
to :class:`MemoryUpdater` in tests. This namespace holds what a pipeline user needs; helpers
(atomic writes, JSON scanning, time and id utilities, token counters, message accessors) stay
in their modules, e.g. ``memlab.core.document.utc_iso``. The agent thread-state reducers of the
seed live in :mod:`memlab.compat`.
"""

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
