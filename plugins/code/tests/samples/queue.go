package queue

// Queue holds waiting jobs in order.
type Queue struct {
	jobs []string
}

// Push adds a job at the back.
func (q *Queue) Push(job string) {
	q.jobs = append(q.jobs, job)
}

func New() *Queue {
	return &Queue{}
}
