"""The memory pipeline: config, contract, parsing, merge, storage, queue, middleware.

Everything here is usable without a model: pass a :class:`memlab.backends.ScriptedBackend`
to :class:`MemoryUpdater` in tests. This namespace holds what a pipeline user needs; helpers
(atomic writes, JSON scanning, time and id utilities, token counters, message accessors) stay
in their modules, e.g. ``memlab.core.jsondoc.document.utc_iso``. The agent thread-state reducers of
the seed live in :mod:`memlab.compat`.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.core.base.clock import VirtualScheduler as VirtualScheduler
    from memlab.core.jsondoc.contract import FACT_CATEGORIES as FACT_CATEGORIES
    from memlab.core.jsondoc.contract import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
    from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE as MINIMAL_VALID_UPDATE
    from memlab.core.jsondoc.contract import SECTION_NAMES as SECTION_NAMES
    from memlab.core.jsondoc.contract import UPLOAD_MARKER as UPLOAD_MARKER
    from memlab.core.jsondoc.contract import FactCategory as FactCategory
    from memlab.core.jsondoc.contract import SchemaBounds as SchemaBounds
    from memlab.core.jsondoc.contract import SectionName as SectionName
    from memlab.core.jsondoc.contract import contract_schema as contract_schema
    from memlab.core.jsondoc.contract import minimal_update as minimal_update
    from memlab.core.jsondoc.contract import validate_update as validate_update
    from memlab.core.jsondoc.document import SeededFactIds as SeededFactIds
    from memlab.core.jsondoc.document import create_empty_memory as create_empty_memory
    from memlab.core.jsondoc.merge import MergeStrategy as MergeStrategy
    from memlab.core.jsondoc.merge import apply_updates as apply_updates
    from memlab.core.jsondoc.merge import get_merge_strategy as get_merge_strategy
    from memlab.core.jsondoc.parsing import FailureCategory as FailureCategory
    from memlab.core.jsondoc.parsing import ParseOptions as ParseOptions
    from memlab.core.jsondoc.parsing import parse_reply as parse_reply
    from memlab.core.jsondoc.similarity import near_duplicate_score as near_duplicate_score
    from memlab.core.pipeline.config import MemoryConfig as MemoryConfig
    from memlab.core.pipeline.config import get_memory_config as get_memory_config
    from memlab.core.pipeline.config import reset_memory_config as reset_memory_config
    from memlab.core.pipeline.config import set_memory_config as set_memory_config
    from memlab.core.pipeline.injection import TokenCounter as TokenCounter
    from memlab.core.pipeline.injection import (
        format_memory_for_injection as format_memory_for_injection,
    )
    from memlab.core.pipeline.injection import get_token_counter as get_token_counter
    from memlab.core.pipeline.messages import (
        filter_messages_for_memory as filter_messages_for_memory,
    )
    from memlab.core.pipeline.messages import (
        format_conversation_for_update as format_conversation_for_update,
    )
    from memlab.core.pipeline.middleware import MemoryMiddleware as MemoryMiddleware
    from memlab.core.pipeline.queue import ConversationContext as ConversationContext
    from memlab.core.pipeline.queue import MemoryUpdateQueue as MemoryUpdateQueue
    from memlab.core.pipeline.queue import get_memory_queue as get_memory_queue
    from memlab.core.pipeline.queue import reset_memory_queue as reset_memory_queue
    from memlab.core.pipeline.storage import InMemoryStorage as InMemoryStorage
    from memlab.core.pipeline.storage import JsonFileStorage as JsonFileStorage
    from memlab.core.pipeline.storage import MemoryStorage as MemoryStorage
    from memlab.core.pipeline.storage import StorageError as StorageError
    from memlab.core.pipeline.updater import MemoryUpdater as MemoryUpdater
    from memlab.core.pipeline.updater import UpdateResult as UpdateResult
    from memlab.core.pipeline.updater import (
        update_memory_from_conversation as update_memory_from_conversation,
    )
    from memlab.core.prompt_template import PromptError as PromptError
    from memlab.core.prompt_template import PromptVariant as PromptVariant
    from memlab.core.prompts import PromptRegistry as PromptRegistry
    from memlab.core.prompts import get_prompt as get_prompt
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
