package dev.tally.spring;

import java.lang.reflect.Method;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.MethodMatcher;
import org.springframework.aop.Pointcut;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Proxies every bean that has a {@link RateLimited} method, the way {@code @Async} and
 * {@code @Validated} are applied, and checks each annotation when the bean is created: a rule
 * name that does not exist or a limit that does not parse stops the application at startup,
 * not at the first request.
 */
final class RateLimitedPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {
  private static final long serialVersionUID = 1L;

  private final transient RateLimitedInterceptor interceptor;

  RateLimitedPostProcessor(RateLimitedInterceptor interceptor) {
    this.interceptor = interceptor;
    MethodMatcher annotated = new StaticMethodMatcher() {
      @Override
      public boolean matches(Method method, Class<?> targetClass) {
        return RateLimitedInterceptor.annotated(AopUtils.getMostSpecificMethod(method, targetClass));
      }
    };
    Pointcut pointcut = new Pointcut() {
      @Override
      public ClassFilter getClassFilter() {
        return ClassFilter.TRUE;
      }

      @Override
      public MethodMatcher getMethodMatcher() {
        return annotated;
      }
    };
    this.advisor = new DefaultPointcutAdvisor(pointcut, interceptor);
    setBeforeExistingAdvisors(true);
    setProxyTargetClass(true);
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    if (!AnnotationUtils.isCandidateClass(type, RateLimited.class)) {
      return super.postProcessAfterInitialization(bean, beanName);
    }
    ReflectionUtils.doWithMethods(type, m -> {
      if (RateLimitedInterceptor.annotated(m)) {
        interceptor.compile(m);
      }
    }, ReflectionUtils.USER_DECLARED_METHODS);
    return super.postProcessAfterInitialization(bean, beanName);
  }
}
