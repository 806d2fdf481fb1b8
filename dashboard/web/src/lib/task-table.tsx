import Link from "next/link";

import { type Task, when } from "./api";

/** Tasks, each linking to its page. */
export function TaskTable({ tasks, testId }: { tasks: Task[]; testId?: string }) {
  return (
    <table data-testid={testId}>
      <thead>
        <tr>
          <th>Task</th>
          <th>Function</th>
          <th>State</th>
          <th>Attempts</th>
          <th>Created</th>
          <th>Ended</th>
        </tr>
      </thead>
      <tbody>
        {tasks.map((t) => (
          <tr key={t.taskId}>
            <td>
              <Link href={`/tasks/${t.taskId}`}>{t.taskId}</Link>
            </td>
            <td>{t.functionName}</td>
            <td className={`state-${t.state}`}>{t.state}</td>
            <td>{t.attempts}</td>
            <td>{when(t.createdAt)}</td>
            <td>{when(t.endedAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
